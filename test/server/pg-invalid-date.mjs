// Loaded into a server process by test/server/logs.test.ts: on SIGUSR2 it hands pg an invalid
// Date, as a write once did, and pg emits its PG_INVALID_DATE deprecation warning.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
process.on('SIGUSR2', () => { require('pg/lib/utils.js').prepareValue(new Date(NaN)) })
