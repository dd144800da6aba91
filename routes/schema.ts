import { Type } from '@sinclair/typebox'
import { Envelope, errorResponses } from '../schemas/common.js'

/** The OpenAPI tag of the service's own address. */
export const serviceTag = { name: 'service', description: 'Where to start: the documentation, the OpenAPI document, the health probe' }

const Link = (description: string, example: string) => Type.String({ description, example })

export const Service = Envelope(Type.Object({
  name: Type.String({ example: 'Student records API' }),
  version: Type.String({ description: 'The service\'s version (package.json)', example: '0.1.0' }),
  links: Type.Object({
    documentation: Link('The browsable documentation page', '/documentation'),
    openapi: Link('The OpenAPI 3.1 document, as JSON (`/documentation/yaml` as YAML)', '/documentation/json'),
    health: Link('The readiness probe: 200 when the service and its database answer', '/health/ready')
  }, { additionalProperties: false })
}, { additionalProperties: false }), { $id: 'Service' })

export const serviceSchemas = {
  index: {
    tags: [serviceTag.name],
    security: [],
    operationId: 'service.index',
    summary: 'Links to the documentation',
    description: 'What answers at the service\'s address: its name and version, and where its documentation, its OpenAPI document and its readiness probe are.',
    response: { 200: Type.Ref(Service, { description: 'The service and its links' }), ...errorResponses() }
  }
}
