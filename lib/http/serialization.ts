import { SerializerSelector, type Options, type SerializerCompiler } from '@fastify/fast-json-stringify-compiler'

type Serializer = ReturnType<SerializerCompiler>
interface Compiler { serializers: Map<string, Serializer>, compile: SerializerCompiler }

/**
 * The response serializers compiled in this process, by the shared schemas and options, then
 * by each response schema's text: a process that builds the app again and again (a test file
 * builds it for each test) would otherwise spend most of each build in fast-json-stringify,
 * as the validators would in ajv (lib/http/validation.ts). A serializer is a pure function of
 * its schema, so apps of one process can share it.
 */
const compilers = new Map<string, Compiler>()
const selectSerializer = SerializerSelector()

/** Fastify's serializer factory (fast-json-stringify's, as Fastify's default), each serializer compiled once a process. */
export function buildSerializer (externalSchemas?: unknown, options?: Options): SerializerCompiler {
  const shared = JSON.stringify([externalSchemas, options])
  let compiler = compilers.get(shared)
  if (compiler === undefined) compilers.set(shared, compiler = { serializers: new Map(), compile: selectSerializer(externalSchemas, options) })
  const { serializers, compile } = compiler
  return route => {
    const key = JSON.stringify(route.schema)
    let serializer = serializers.get(key)
    if (serializer === undefined) serializers.set(key, serializer = compile(route))
    return serializer
  }
}
