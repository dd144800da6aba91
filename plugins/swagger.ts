import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { packageInfo } from '../lib/package-info.js'

export const TITLE = 'Student records API'

/**
 * The OpenAPI 3.1 document, built from the routes' TypeBox schemas and served at
 * /documentation/json and /documentation/yaml, with a browsable page at /documentation
 * whose assets are served from the package itself (no CDN).
 */
export default fp(async (fastify) => {
  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: TITLE,
        version: packageInfo.version,
        description: 'Students in two variants (`/api/v1/students`, `/students`), and an authenticated interface with users, roles, permissions and clients. Every error answers the `ErrorBody`.',
        license: { name: packageInfo.license, identifier: packageInfo.license }
      },
      servers: [{ url: '/', description: 'This server' }],
      tags: [
        { name: 'students (v1)', description: 'Variant A: the update changes the name only' },
        { name: 'students', description: 'Variant B: updates change any of the fields' },
        { name: 'auth', description: 'Register, log in and out, the caller\'s profile' },
        { name: 'clients', description: 'Clients, behind the client-* permissions' },
        { name: 'roles', description: 'Roles and permissions, behind the role-* permissions' },
        { name: 'users', description: 'Users, behind the user-* permissions' },
        { name: 'health', description: 'Liveness and readiness probes' }
      ],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A token from POST /api/login or /api/register' }
        }
      }
    },
    // Shared schemas become components named by their $id (every one has one), not def-0, def-1, ...
    refResolver: { buildLocalReference: json => String(json.$id) }
  })
  // Its own CSP on its page, with the hashes of the page's inline scripts (the API's would refuse them).
  await fastify.register(swaggerUi, { routePrefix: '/documentation', staticCSP: true, theme: { title: TITLE } })
}, { name: 'swagger', dependencies: ['schemas'] })
