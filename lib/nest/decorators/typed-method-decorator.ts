/**
 * A method decorator that only fits methods assignable to `F`: the compiler
 * checks a handler's parameters against the payload type of its queue.
 */
export type TypedMethodDecorator<F> = <M extends F>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
