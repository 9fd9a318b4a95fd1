// Whether a handler can see the AbortSignal it is called with. On Node 20 one AbortSignal costs about 730
// bytes of heap (two Maps and a hidden class of its own), more than everything else a running job holds
// together; a handler that cannot read its second argument is given the worker's shared signal instead of
// one of its own, since which signal it gets cannot be observed.

const NATIVE = /\{\s*\[native code\]\s*\}\s*$/;
const ARGUMENTS_OR_EVAL = /\b(?:arguments|eval)\b/;
/** `job => …` or `async job => …`: one plain parameter. */
const BARE_ARROW = /^(?:async\s+)?[\w$]+\s*=>/;
/** What may precede the parameter list: `(`, `async (`, `function name(`, `async function* name(`, `name(`, `async *name(`. */
const HEAD = /^(?:async\s*)?(?:function\s*\*?\s*[\w$]*\s*|\*?\s*[\w$]+\s*)?\(/;

/**
 * False only when `fn` provably cannot read a second argument: it declares fewer than two parameters,
 * none of them a rest or default parameter, never names `arguments` or `eval`, and is not a sloppy-mode
 * function (whose `fn.arguments` others can read). Anything this does not understand (bound, native or
 * proxied functions, unusual parameter lists) counts as reading it.
 */
export function mayReadSignal(fn: unknown): boolean {
  if (typeof fn !== 'function') return true;
  if (fn.length >= 2) return true;
  if (Object.prototype.hasOwnProperty.call(fn, 'arguments')) return true;
  let src: string;
  try {
    src = Function.prototype.toString.call(fn);
  } catch {
    return true;
  }
  if (NATIVE.test(src) || ARGUMENTS_OR_EVAL.test(src)) return true;
  if (BARE_ARROW.test(src)) return false;
  const head = HEAD.exec(src);
  if (!head) return true;
  // With no rest or default parameter, `fn.length` counts every parameter: fewer than two.
  return !plainParameters(src, head[0].length);
}

/** True when the parameter list opening before `from` closes with no rest, default, string, comment or regex in it. */
function plainParameters(src: string, from: number): boolean {
  let depth = 0;
  for (let i = from; i < src.length; i++) {
    const c = src[i]!;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ')') {
      if (depth === 0) return true;
      depth--;
    } else if (c === '.' || c === '=' || c === '/' || c === '"' || c === "'" || c === '`') return false;
  }
  return false;
}
