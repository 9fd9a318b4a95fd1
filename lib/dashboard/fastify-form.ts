import { BadRequestException, UnsupportedMediaTypeException } from '@nestjs/common';
import { FORM_TYPE, FormTooLarge, readForm } from './form-body.js';

/** The parts of a Fastify instance used here (alkstore does not depend on Fastify). */
interface FastifyLike {
  hasContentTypeParser(contentType: string): boolean;
  addContentTypeParser(
    contentType: string,
    parser: (
      request: { readonly routeOptions?: { readonly url?: string } },
      payload: AsyncIterable<Buffer | string>,
      done: (err: Error | null, body?: unknown) => void,
    ) => void,
  ): void;
}

/**
 * Fastify answers 415 to a urlencoded POST when no parser is registered for it
 * (a Nest app created with `bodyParser: false`). Registers one that reads the
 * dashboard's action route only: every other route of the app keeps Fastify's
 * 415, so mounting the dashboard changes nothing outside it. A parser the app
 * has by `onModuleInit` (Nest's default one, `@fastify/formbody` registered
 * before `app.init()`) is left alone and reads the dashboard's forms too.
 */
export function ensureFastifyFormParser(fastify: FastifyLike, actionRoute: string): void {
  if (fastify.hasContentTypeParser(FORM_TYPE)) return;
  fastify.addContentTypeParser(FORM_TYPE, (request, payload, done) => {
    if (!request.routeOptions?.url?.endsWith(actionRoute)) {
      done(new UnsupportedMediaTypeException(`Unsupported Media Type: ${FORM_TYPE}`));
      return;
    }
    readForm(payload).then(
      (form) => done(null, form),
      (err: unknown) =>
        err instanceof FormTooLarge
          ? done(null, err)
          : done(new BadRequestException(err instanceof Error ? err.message : String(err))),
    );
  });
}
