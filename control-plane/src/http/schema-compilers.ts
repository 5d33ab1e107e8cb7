import type { FastifyServerOptions } from 'fastify';
import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;
type BuildSerializer = NonNullable<CompilersFactory['buildSerializer']>;

// fastify's own compilers (ajv for requests, fast-json-stringify for responses), made once per
// process instead of once per app.
const validators = AjvCompiler();
const serializers = SerializerSelector();

/** Compiled functions by external schemas, options and route schema, for the life of the process. */
const compiled = new Map<string, unknown>();

function remembered<T>(key: string, compile: () => T): T {
  if (compiled.has(key)) return compiled.get(key) as T;
  const made = compile();
  compiled.set(key, made);
  return made;
}

/**
 * Schema compilers shared by every control plane built in this process. Compiling the schemas of
 * every route is most of what `ready()` costs (about 0.4 s of CPU for the whole app); a test
 * process builds several apps with the same routes, and a replica set in one process builds one
 * per replica. The compiled validators and serializers are pure functions of the schema, the
 * shared schemas (`addSchema`) and the compiler options, which is exactly their key here. Route
 * schemas are written inline in each area's plugin, so a fresh object each build: the key is their
 * JSON, not their identity.
 */
export const sharedSchemaCompilers: CompilersFactory = {
  buildValidator: ((externalSchemas: Record<string, unknown>, options: unknown) => {
    const context = JSON.stringify([externalSchemas, options]);
    const compile = validators(externalSchemas as never, options as never);
    return (route: { schema: unknown; httpPart?: string }) =>
      remembered(`validator\0${context}\0${route.httpPart ?? ''}\0${JSON.stringify(route.schema)}`, () =>
        compile(route as never),
      );
  }) as BuildValidator,
  buildSerializer: ((externalSchemas: Record<string, unknown>, options: unknown) => {
    const context = JSON.stringify([externalSchemas, options]);
    const compile = serializers(externalSchemas, options as never);
    return (route: { schema: unknown }) =>
      remembered(`serializer\0${context}\0${JSON.stringify(route.schema)}`, () => compile(route as never));
  }) as BuildSerializer,
};
