/**
 * A method decorator that appends `value` to a list kept on the method itself,
 * so one method may carry the same decorator twice (two outboxes, say) without
 * the second silently replacing the first.
 */
export function appendMethodMetadata(key: string, value: unknown): MethodDecorator {
  return (_target, _property, descriptor) => {
    const method = descriptor.value as object | undefined;
    if (typeof method !== 'function') return descriptor;
    const list = (Reflect.getMetadata(key, method) as unknown[] | undefined) ?? [];
    Reflect.defineMetadata(key, [...list, value], method);
    return descriptor;
  };
}

/** The list {@link appendMethodMetadata} kept on `method` (empty when none). */
/** Applies several method decorators in order. */
export function composeMethodDecorators(...decorators: MethodDecorator[]): MethodDecorator {
  return (target, property, descriptor) => {
    for (const d of decorators) d(target, property, descriptor);
    return descriptor;
  };
}

export function readMethodMetadata<T>(key: string, method: unknown): T[] {
  if (typeof method !== 'function') return [];
  return (Reflect.getMetadata(key, method) as T[] | undefined) ?? [];
}
