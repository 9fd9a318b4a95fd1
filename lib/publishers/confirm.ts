import { PermanentError, PublishFailed } from '../contract/errors.js';

/**
 * Awaits a broker confirmation, but gives up when `signal` aborts (the
 * dispatcher's publish timeout, a lost lease, shutdown). A confirmation that
 * arrives after giving up calls `onLate`: the message landed although its
 * publish counted as failed, so it will be published again (the fourth
 * duplicate window, absorbed by the dedup id where the broker has one).
 */
export function awaitConfirm<T>(confirm: Promise<T>, signal: AbortSignal, onLate: () => void): Promise<T> {
  if (signal.aborted) {
    confirm.then(onLate, () => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = (): void => {
      if (settled) return;
      settled = true;
      reject(abortError(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    confirm.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return onLate();
        settled = true;
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        reject(err);
      },
    );
  });
}

function abortError(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new PublishFailed(typeof r === 'string' ? r : 'publish aborted');
}

/** Encodes a payload as the broker message body (JSON, UTF-8) and refuses one above `maxBytes` as permanent. */
export function encodeBody(payload: unknown, maxBytes: number, broker: string, limitName: string): Buffer {
  const body = Buffer.from(JSON.stringify(payload) ?? 'null', 'utf8');
  if (body.length > maxBytes) {
    throw new PermanentError(`message too large for ${broker}: ${body.length} bytes, above its ${limitName} of ${maxBytes} bytes`);
  }
  return body;
}

/** Logs a connection failure once per outage (the first failure after being up, or at startup). */
export class OutageLog {
  private reported = false;
  detail: string | undefined;

  constructor(
    private readonly warn: (message: string) => void,
    private readonly what: string,
  ) {}

  failed(err: unknown): void {
    this.detail = err instanceof Error ? err.message : String(err);
    if (this.reported) return;
    this.reported = true;
    this.warn(`${this.what} is unreachable (${this.detail}); messages stay pending and the publisher keeps retrying`);
  }

  recovered(): void {
    this.reported = false;
    this.detail = undefined;
  }
}

/** Sleeps `ms` unless `signal` aborts first (resolves either way). */
export function pauseUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
