import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../schemas/common.js'

const Status = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String({ description: 'The running version of the service (package.json\'s `version`): which release answers, when several are deployed', example: '0.1.0' })
}, { additionalProperties: false })
/** The OpenAPI tag of the probes. */
export const healthTag = { name: 'health', description: 'Liveness and readiness probes' }
const common = { tags: [healthTag.name], security: [] }
// The probes spend no rate limit (balancers call them): no 429.
const { 429: _, ...probeErrors } = errorResponses()

export const healthSchemas = {
  live: {
    ...common,
    operationId: 'health.live',
    summary: 'Liveness',
    description: 'The process answers; says nothing of the database. For restarting a stuck process.',
    response: { 200: { ...Status, description: 'Alive' }, ...probeErrors }
  },
  ready: {
    ...common,
    operationId: 'health.ready',
    summary: 'Readiness',
    description: 'The database answers too: 503 with Retry-After when it does not, or once the service is shutting down (it serves on for SHUTDOWN_DELAY). For routing traffic.',
    response: { 200: { ...Status, description: 'Ready for traffic' }, ...probeErrors }
  }
}
