// What the example clients share: the typed client of the service, generated from openapi.json
// (`npx openapi-typescript openapi.json -o examples/client/api.d.ts`), and their steps' report,
// one line a step (`ok - …`, or `not ok - …` with the service's answer, and an exit).
import createClient from 'openapi-fetch'
import type { paths } from './api.js'

/** An answer of openapi-fetch: its body is in `data` (2xx) or in `error`. */
export interface Answer { response: Response, data?: unknown, error?: unknown }

/** The service at `baseUrl`, typed; no answer at all stops the client, saying so. */
export function serviceAt (baseUrl: string) {
  // The JSON answers: the lists also answer CSV and NDJSON (their exports), which these clients do not read.
  return createClient<paths, 'application/json'>({
    baseUrl,
    fetch: request => fetch(request).catch((error: Error & { cause?: Error }) => {
      console.error(`not ok - no answer from ${baseUrl} (${error.cause?.message ?? error.message}): is the service running (npm start)?`)
      return process.exit(1)
    })
  })
}

/** The client stops, saying which step failed and what the service answered (and what to do). */
export function fail (step: string, answer: Answer, hint?: string): never {
  const body = answer.error ?? answer.data
  console.error(`not ok - ${step}: HTTP ${answer.response.status} ${body === undefined ? '(no body)' : JSON.stringify(body)}`)
  if (hint) console.error(hint)
  return process.exit(1)
}

/** A step passed, or the client stops. */
export function check (condition: unknown, step: string, answer: Answer): asserts condition {
  if (!condition) fail(step, answer)
  console.log(`ok - ${step}`)
}

export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
