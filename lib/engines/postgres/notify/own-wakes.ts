// PostgreSQL only: a store's own commits wake its receivers in-process and their NOTIFY echo is dropped;
// SQLite's writer wakes them after COMMIT itself (writer.ts).
import { performance } from 'node:perf_hooks';

/**
 * How the statements of one executor announce wakes. `run` calls `statement`
 * with the wake parameter to send through `pg_notify` (the plain payload, or
 * a tagged one this store recognises), then learns from `notified` whether
 * the statement did notify.
 */
export interface Wakes {
  run<R>(payload: string, statement: (wakeParam: string) => Promise<R>, notified: (result: R) => boolean): Promise<R>;
}

/** A caller-owned transaction: no commit hook, so the wake travels by NOTIFY alone (sent on the caller's COMMIT). */
export const NOTIFY_ONLY: Wakes = {
  run: (payload, statement) => statement(payload),
};

/** Tags still awaiting their echo are forgotten after this (the echo then wakes once more: harmless). */
const EXPECT_MAX_AGE_MS = 30_000;
/** Upper bound of tags awaiting their echo; the oldest go first. */
const EXPECT_MAX = 50_000;

interface Expected {
  /** The payload without its tag. */
  readonly payload: string;
  /** Whether one of the two deliveries (local or echo) already woke. */
  woken: boolean;
  readonly at: number;
}

/**
 * Same-process wakes of a store's own commits. A statement that wakes a queue
 * sends `t<store>.<n>;<payload>`: once the statement has resolved (the
 * commit is done), this store's receivers are woken at once instead of
 * waiting for the NOTIFY to come back through the LISTEN connection; other
 * stores (processes) still get the NOTIFY and, not knowing the tag, wake on
 * it. When the echo of a tag this store already delivered comes back, it is
 * dropped; when the echo comes first (the listener can read it before the
 * statement's reply arrives) it wakes and the local delivery is dropped. A
 * tag this store does not expect (another store's, one that failed, or one
 * forgotten) always wakes: suppression never drops another process's wake.
 */
export class OwnWakes {
  private seq = 0;
  private readonly expected = new Map<string, Expected>();
  /** Engine-owned autocommit statements (the pool). */
  readonly autocommit: Wakes;

  constructor(
    private readonly storeTag: string,
    /** Wakes this store's receivers for an untagged payload. */
    private readonly deliver: (payload: string) => void,
    /** Whether the echo can be expected (LISTEN is up): when not, nothing is remembered. */
    private readonly listening: () => boolean,
  ) {
    this.autocommit = {
      run: async (payload, statement, notified) => {
        const tagged = this.tag(payload);
        this.expect(tagged, payload);
        let r;
        try {
          r = await statement(tagged);
        } catch (err) {
          // Committed or not is unknown: forget the tag so a late echo still wakes.
          this.expected.delete(tagged);
          throw err;
        }
        if (notified(r)) this.committed(tagged, payload);
        else this.expected.delete(tagged);
        return r;
      },
    };
  }

  /** A fresh tagged payload (one per statement or transaction). */
  tag(payload: string, tag = this.newTag()): string {
    return `t${tag};${payload}`;
  }

  newTag(): string {
    return `${this.storeTag}.${++this.seq}`;
  }

  /** A transaction's wakes: delivered locally only after its COMMIT has resolved (see {@link TxWakes}). */
  forTransaction(): TxWakes {
    return new TxWakes(this);
  }

  /** Before a tagged payload can be committed: its echo is to be expected. */
  expect(tagged: string, payload: string): void {
    if (!this.listening()) return;
    const now = performance.now();
    if (this.expected.size >= EXPECT_MAX) this.dropOldest(1);
    for (const [k, e] of this.expected) {
      if (e.at > now - EXPECT_MAX_AGE_MS) break;
      this.expected.delete(k);
    }
    this.expected.set(tagged, { payload, woken: false, at: now });
  }

  /** The statement (or transaction) that sent `tagged` has committed: wake now unless its echo already did. */
  committed(tagged: string, payload: string): void {
    const e = this.expected.get(tagged);
    if (e?.woken) {
      this.expected.delete(tagged);
      return;
    }
    if (e) e.woken = true;
    this.deliver(payload);
  }

  /** `tagged` will never be committed (rolled back), or its fate is unknown. */
  forget(tagged: string): void {
    this.expected.delete(tagged);
  }

  /**
   * A notification carried `tag` (its text after `t`, up to `;`). Returns
   * whether it has to wake: false only for the echo of a wake this store
   * already delivered itself.
   */
  echo(tag: string, tagged: string): boolean {
    if (!tag.startsWith(this.storeTag) || tag.charCodeAt(this.storeTag.length) !== 46 /* . */) return true;
    const e = this.expected.get(tagged);
    if (!e) return true;
    if (e.woken) {
      this.expected.delete(tagged);
      return false;
    }
    e.woken = true;
    return true;
  }

  /** LISTEN was re-established (every receiver is woken anyway); echoes of the gap never come. */
  reset(): void {
    this.expected.clear();
  }

  /** How many tags await their echo (tests, diagnostics). */
  get pending(): number {
    return this.expected.size;
  }

  private dropOldest(n: number): void {
    for (const k of this.expected.keys()) {
      if (n-- <= 0) return;
      this.expected.delete(k);
    }
  }
}

/**
 * The wakes of one engine-owned transaction: each notifying statement sends
 * its payload under the transaction's tag (PostgreSQL collapses repeats of
 * one payload within a transaction), and {@link TxWakes.commit} delivers them
 * locally once COMMIT has resolved; {@link TxWakes.abandon} after ROLLBACK or
 * a failed COMMIT.
 */
export class TxWakes implements Wakes {
  private readonly tag: string;
  private readonly sent = new Map<string, string>();

  constructor(private readonly own: OwnWakes) {
    this.tag = own.newTag();
  }

  async run<R>(
    payload: string,
    statement: (wakeParam: string) => Promise<R>,
    notified: (result: R) => boolean,
  ): Promise<R> {
    const tagged = this.own.tag(payload, this.tag);
    const r = await statement(tagged);
    if (notified(r) && !this.sent.has(tagged)) {
      this.sent.set(tagged, payload);
      this.own.expect(tagged, payload);
    }
    return r;
  }

  /** After COMMIT resolved. */
  commit(): void {
    for (const [tagged, payload] of this.sent) this.own.committed(tagged, payload);
    this.sent.clear();
  }

  /** After ROLLBACK, or a COMMIT whose outcome is unknown (a late echo then still wakes). */
  abandon(): void {
    for (const tagged of this.sent.keys()) this.own.forget(tagged);
    this.sent.clear();
  }
}
