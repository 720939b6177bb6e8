/**
 * The glyph leading each healing marker under an answer (the page's app.ts writes them): each one
 * a character Debian's default fonts (DejaVu Sans, DejaVu Serif) have, so that none renders as the
 * empty box of a missing glyph — the hedge's fork is U+22D4 PITCHFORK, not U+2442 (no DejaVu font
 * has that one, nor U+23F5, the resume's old triangle). spec/demo/browser.spec.ts draws each one
 * in Chromium and compares it with the missing-glyph box.
 */
export const MARKS = {
  retry: '↻',
  fallback: '⤳',
  hedge: '⋔',
  resume: '▸',
  reflection: '✎',
  degradation: '⚠',
} as const;
