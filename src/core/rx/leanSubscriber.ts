import { Subscriber, Subscription, UnsubscriptionError, type TeardownLogic } from 'rxjs';

/**
 * A `Subscriber` that keeps a lone finaliser in a field. RxJS keeps a subscription's finalisers
 * in an array, made at the first `add` with room for 17 (184 B for one finaliser); a subscriber
 * in a chain usually holds exactly one — the subscriber upstream of it (which adds itself to its
 * destination), or the teardown its source returned — so a chain of these holds no arrays. A
 * class to extend, not a helper: the finalisers are the subscription's own (`add` / `remove` /
 * `unsubscribe`, which RxJS calls).
 *
 * The rules are RxJS's: a finaliser added when closed runs at once; a closed subscription, or one
 * already held, is not added; finalisers run in the order they were added. The lone one moves to
 * RxJS's array when a second comes, and every later one goes there. One difference: a
 * subscription held in the field is not told who holds it, so when it closes first it is let go
 * of at the holder's next `add` or close rather than at once (one closed subscription at most).
 *
 * Not for the subscribers of a guarded call (`retryWithBackoff`'s attempt, `circuitBreak`'s
 * permit): there they seldom hold a finaliser (a promise's source returns none), and the overrides
 * cost ~5% of the call (`bench/ab.ts`, figure a).
 *
 * @internal
 */
export class LeanSubscriber<T> extends Subscriber<T> {
  /** The lone finaliser; `null` once closed or once RxJS's array is in use (the rest go there, in order). */
  private lone: Exclude<TeardownLogic, void> | null | undefined = undefined;

  override add(teardown: TeardownLogic): void {
    if (!teardown || teardown === this) return;
    const lone = this.lone;
    if (lone === undefined && !this.closed) {
      if (!(teardown instanceof Subscription && teardown.closed)) this.lone = teardown;
      return;
    }
    if (lone !== undefined && lone !== null) {
      if (teardown === lone && teardown instanceof Subscription) return;
      this.lone = null;
      super.add(lone);
    }
    super.add(teardown);
  }

  override remove(teardown: Exclude<TeardownLogic, void>): void {
    if (teardown === this.lone) this.lone = undefined;
    else super.remove(teardown);
  }

  override unsubscribe(): void {
    if (this.closed) return;
    const lone = this.lone;
    this.lone = null;
    // with a lone finaliser, RxJS's array is empty: nothing of its own to run before it
    super.unsubscribe();
    if (lone === undefined || lone === null) return;
    try {
      if (typeof lone === 'function') lone();
      else lone.unsubscribe();
    } catch (error) {
      throw new UnsubscriptionError(error instanceof UnsubscriptionError ? error.errors : [error]);
    }
  }
}
