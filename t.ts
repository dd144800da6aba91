import Fastify from 'fastify'
import app, { serverOptions } from './app.js'
import { loadConfig } from './lib/config.js'
const config = { ...loadConfig({ ...process.env, DB_HOST: '127.0.0.1', JWT_SECRET: 'x'.repeat(32) }), logLevel: 'silent' as const }
const f = Fastify(serverOptions(config)); await f.register(app, { config }); await f.ready()
const doc = f.swagger() as any
console.log(Object.keys(doc.paths).join('\n')); console.log(Object.keys(doc.components.schemas))
console.log(JSON.stringify(doc.paths['/api/clients/{id}'].patch, null, 1).slice(0, 1500))
await f.close()
