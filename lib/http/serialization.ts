import { SerializerSelector, type Options, type Serializer, type SerializerCompiler } from '@fastify/fast-json-stringify-compiler'

/**
 * The response serializers compiled in this process, by the shared schemas and options, then
 * by each response schema's text: a process that builds the app again and again (a test file
 * builds it for each test) would otherwise spend most of each build in fast-json-stringify,
 * as the validators would in ajv (lib/http/validation.ts). A serializer is a pure function of
 * those three, so apps of one process can share it. The options are the app's serializerOpts,
 * plain JSON (none here): a function among them would not be told apart.
 */
const compilers = new Map<string, Map<string, Serializer>>()
const selectSerializer = SerializerSelector()

/**
 * A serializer compiled when it is first called: a process compiles the serializers of the
 * answers it gives, when it first gives them, not every route's at start-up, as the validators
 * (lib/http/validation.ts).
 */
function compiledAtFirstUse (compile: () => Serializer): Serializer {
  let serializer: Serializer | undefined
  return (data: unknown) => (serializer ??= compile())(data)
}

/** Fastify's serializer factory (fast-json-stringify's, as Fastify's default), each serializer compiled once a process. */
export function buildSerializer (externalSchemas?: unknown, options?: Options): SerializerCompiler {
  const shared = JSON.stringify([externalSchemas, options])
  let serializers = compilers.get(shared)
  if (serializers === undefined) compilers.set(shared, serializers = new Map())
  return route => {
    const key = JSON.stringify(route.schema)
    let serializer = serializers.get(key)
    // A compiler of its own for each schema, as Fastify's default gets one for each route of a
    // context with schemas of its own: compiling a shared schema itself (one with its `$id`)
    // takes that schema out of the compiler's copy of the shared ones for good.
    if (serializer === undefined) serializers.set(key, serializer = compiledAtFirstUse(() => selectSerializer(externalSchemas, options)(route)))
    return serializer
  }
}
