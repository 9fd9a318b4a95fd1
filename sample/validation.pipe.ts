import { BadRequestException, ValidationPipe, type ArgumentMetadata } from '@nestjs/common';

/** Deepest nesting a request body may have; `POST /orders` takes a flat object. */
const MAX_BODY_DEPTH = 32;

/**
 * The global `ValidationPipe`, refusing a body nested deeper than
 * {@link MAX_BODY_DEPTH} first with a 400. JSON.parse accepts any depth, but
 * class-transformer walks a body recursively: 45,000 nested arrays overflow the
 * stack and would answer 500. The depth is measured without recursion.
 */
export class SampleValidationPipe extends ValidationPipe {
  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && depthOf(value, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
      throw new BadRequestException(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
    }
    return super.transform(value, metadata);
  }
}

/** Nesting depth of arrays and objects in `value` (a scalar is 0), counted up to `limit + 1`. */
function depthOf(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Object.values(v as object)) stack.push([child, depth + 1]);
  }
  return max;
}
