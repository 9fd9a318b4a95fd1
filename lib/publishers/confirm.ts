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
    throw new PermanentError(
      `message too large for ${broker}: ${body.length} bytes, above its ${limitName} of ${maxBytes} bytes`,
    );
  }
  return body;
}
