/** The content type of the dashboard's forms. */
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/** The dashboard's forms are a few short fields; anything bigger is refused. */
export const FORM_LIMIT = 64 * 1024;

/** A form over {@link FORM_LIMIT}; the dashboard answers it with a 413 page, never lets it out. */
export class FormTooLarge extends Error {
  constructor() {
    super(`the form is larger than ${FORM_LIMIT} bytes`);
  }
}

function isForm(contentType: unknown): boolean {
  return typeof contentType === 'string' && contentType.split(';')[0]!.trim().toLowerCase() === FORM_TYPE;
}

/** Fields of a urlencoded body, first value of each name (the selected rows' `ids` joined by commas); no prototype, so `__proto__` is just a name. */
export function parseForm(text: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of new URLSearchParams(text)) {
    if (name === 'ids' && Object.hasOwn(out, name)) out[name] = `${out[name]},${value}`;
    else if (!Object.hasOwn(out, name)) out[name] = value;
  }
  return out;
}

/** Reads and parses a urlencoded body from its stream; {@link FormTooLarge} past {@link FORM_LIMIT} bytes. */
export async function readForm(stream: AsyncIterable<Buffer | string>): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    size += buf.length;
    if (size > FORM_LIMIT) throw new FormTooLarge();
    chunks.push(buf);
  }
  return parseForm(Buffer.concat(chunks).toString('utf8'));
}

interface RawRequest {
  readonly body?: unknown;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly readableEnded?: boolean;
}

/**
 * The body of a dashboard POST. The app's body parser normally did the work;
 * when it is off (`bodyParser: false` on Express), the request stream is still
 * unread and the form is read here.
 */
export async function formBody(req: RawRequest): Promise<unknown> {
  // The Fastify parser below hands a too-large form over as its error, so the dashboard answers with its own page.
  if (req.body instanceof FormTooLarge) throw req.body;
  if (req.body !== undefined) return req.body;
  const stream = req as Partial<AsyncIterable<Buffer | string>>;
  if (
    !isForm(req.headers['content-type']) ||
    req.readableEnded !== false ||
    typeof stream[Symbol.asyncIterator] !== 'function'
  )
    return undefined;
  return readForm(stream as AsyncIterable<Buffer | string>);
}
