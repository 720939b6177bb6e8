/**
 * Runs the 1 h outage marble test once in a fresh process and prints its wall time in ms: the
 * cold figure (nothing JIT-compiled yet). Used by `bench/index.ts`.
 */
import { hourOfOutage } from './figures/marble.js';

const t0 = process.hrtime.bigint();
hourOfOutage();
console.log(Number(process.hrtime.bigint() - t0) / 1e6);
