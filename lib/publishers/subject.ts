import { InvalidOption } from '../contract/errors.js';
import type { OutboxMessage } from './publisher.js';

/** Fields a subject/topic/routing-key template may use: `{type}`, `{version}`, `{key}`, `{outbox}`, `{id}` and `{header:<name>}`. */
export const TEMPLATE_FIELDS = ['type', 'version', 'key', 'outbox', 'id'] as const;

/** Where a message goes: a fixed string, a template, or a function of the message. */
export type Destination = string | ((message: OutboxMessage) => string);

const FIELD = /\{([^{}]*)\}/g;

/**
 * Compiles a destination template, refusing an unknown field at construction
 * ({@link InvalidOption} naming `option` and the field). A field the message
 * lacks (no type, no ordering key) renders as the outbox name for `{type}`
 * and as `_` otherwise, so a subject is never empty.
 */
export function compileDestination(option: string, d: unknown): (m: OutboxMessage) => string {
  if (typeof d === 'function') {
    const fn = d as (m: OutboxMessage) => unknown;
    return (m) => {
      const out = fn(m);
      if (typeof out !== 'string' || out.length === 0)
        throw new InvalidOption(option, `function must return a non-empty string, got ${typeof out}`);
      return out;
    };
  }
  if (typeof d !== 'string' || d.trim().length === 0)
    throw new InvalidOption(option, 'must be a non-empty template string or a function of the message');
  const parts: ((m: OutboxMessage) => string)[] = [];
  let last = 0;
  for (const match of d.matchAll(FIELD)) {
    const literal = d.slice(last, match.index);
    parts.push(() => literal);
    const name = match[1]!;
    if (name.startsWith('header:') && name.length > 'header:'.length) {
      const h = name.slice('header:'.length);
      parts.push((m) => m.headers[h] ?? '_');
    } else if ((TEMPLATE_FIELDS as readonly string[]).includes(name)) {
      parts.push(fieldOf(name as (typeof TEMPLATE_FIELDS)[number]));
    } else {
      throw new InvalidOption(
        option,
        `has an unknown template field {${name.slice(0, 64)}}; use ${TEMPLATE_FIELDS.map((f) => `{${f}}`).join(', ')} or {header:<name>}`,
      );
    }
    last = match.index + match[0].length;
  }
  const tail = d.slice(last);
  if (tail.includes('{') || tail.includes('}')) throw new InvalidOption(option, 'has an unbalanced brace');
  parts.push(() => tail);
  return (m) => parts.map((p) => p(m)).join('');
}

function fieldOf(name: (typeof TEMPLATE_FIELDS)[number]): (m: OutboxMessage) => string {
  switch (name) {
    case 'type':
      return (m) => m.envelope.type ?? m.outbox;
    case 'version':
      return (m) => String(m.envelope.version ?? 1);
    case 'key':
      return (m) => m.key ?? '_';
    case 'outbox':
      return (m) => m.outbox;
    case 'id':
      return (m) => m.id;
  }
}
