// compose.yaml, read as Compose reads it (YAML with merge keys): the topology it promises. The
// containers themselves run in test/container/image.test.ts, as this file lays them out.
import { existsSync, readFileSync } from 'node:fs'
import { BlockList } from 'node:net'
import t from 'tap'
import { parse } from 'yaml'
import { loadConfig } from '../../lib/process/config.js'

interface Service {
  build?: string
  image: string
  command?: string[]
  read_only?: boolean
  environment?: Record<string, string>
  depends_on?: Record<string, { condition: string }>
  ports?: string[]
  volumes?: string[]
  networks?: Record<string, { ipv4_address?: string }>
}

const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>
  networks?: Record<string, { ipam?: { config: { subnet: string, ip_range?: string }[] } }>
}
const { services } = compose

t.test('compose.yaml: PostgreSQL, a migration step, two instances after it, HAProxy in front with deploy/haproxy.cfg; port 3000 only', async t => {
  t.same(Object.keys(services).sort(), ['api-1', 'api-2', 'haproxy', 'migrate', 'postgres'])
  t.same(services.migrate!.command, ['node', 'dist/scripts/migrate.js'], 'the migration step runs the migration script')
  t.same(services.migrate!.depends_on, { postgres: { condition: 'service_healthy' } })
  for (const name of ['migrate', 'api-1', 'api-2']) {
    const service = services[name]!
    t.equal(service.build, '.', `${name}: the Dockerfile's image`)
    t.equal(service.read_only, true, `${name}: a read-only root filesystem`)
    t.equal(service.environment!.DB_HOST, 'postgres', `${name}: on the compose PostgreSQL`)
    t.ok(service.environment!.JWT_SECRET!.startsWith('${JWT_SECRET:-'), `${name}: JWT_SECRET from the environment first`)
    t.notOk(service.ports, `${name}: no port published`)
  }
  for (const name of ['api-1', 'api-2']) {
    t.equal(services[name]!.environment!.MIGRATE, 'false', `${name}: does not migrate`)
    t.same(services[name]!.depends_on, { migrate: { condition: 'service_completed_successfully' } }, `${name}: starts once the migration succeeded`)
  }
  const haproxy = services.haproxy!
  t.same(haproxy.volumes, ['./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro'])
  t.ok(existsSync('deploy/haproxy.cfg'))
  t.same(haproxy.environment, { LB_BIND: ':3000', INSTANCE_1: 'api-1:3000', INSTANCE_2: 'api-2:3000' }, 'the variables deploy/haproxy.cfg reads')
  t.same(haproxy.ports, ['127.0.0.1:3000:3000'], 'on this machine only, as its secrets are defaults')
  t.same(haproxy.depends_on, { 'api-1': { condition: 'service_healthy' }, 'api-2': { condition: 'service_healthy' } }, 'after the instances\' health checks pass')
})

t.test('compose.yaml: every image pulled is named in full, registry and all (podman refuses a short name to pull); the one built here is not pulled', async t => {
  for (const [name, service] of Object.entries(services)) {
    if (service.build !== undefined) {
      t.equal(service.image, 'student-records-api', `${name}: the image built from the Dockerfile`)
      continue
    }
    t.match(service.image, /^docker\.io\/library\/[a-z0-9-]+:[\w.-]+$/, `${name}: ${service.image}, with its registry, path and tag`)
  }
  t.same(Object.entries(services).filter(([, service]) => service.build === undefined).map(([name]) => name).sort(), ['haproxy', 'postgres'], 'the two pulled')
})

t.test('compose.yaml: the instances trust X-Forwarded-For from HAProxy\'s fixed address only, and HAProxy sends it', async t => {
  const [subnet] = compose.networks!.default!.ipam!.config
  const haproxyAddress = services.haproxy!.networks!.default!.ipv4_address!
  const network = new BlockList()
  const [base, prefix] = subnet!.subnet.split('/')
  network.addSubnet(base!, Number(prefix))
  t.ok(network.check(haproxyAddress), `HAProxy's ${haproxyAddress} is in the project's network ${subnet!.subnet}`)
  const handedOut = new BlockList()
  const [rangeBase, rangePrefix] = (subnet!.ip_range ?? subnet!.subnet).split('/')
  handedOut.addSubnet(rangeBase!, Number(rangePrefix))
  t.notOk(handedOut.check(haproxyAddress), `HAProxy's ${haproxyAddress} is outside the range handed out to other containers`)
  for (const name of ['api-1', 'api-2']) {
    const environment = services[name]!.environment!
    t.same(loadConfig({ ...environment, JWT_SECRET: 'x'.repeat(32) }).trustProxy, [haproxyAddress], `${name}: TRUST_PROXY names HAProxy, and nothing else`)
    t.notOk(services[name]!.ports, `${name}: reached through HAProxy only`)
  }
  t.match(readFileSync('deploy/haproxy.cfg', 'utf8'), /^\s+option forwardfor$/m, 'HAProxy adds the client\'s address to X-Forwarded-For')
})
