# The service's image. One stage installs every dependency and compiles the TypeScript to dist/;
# the image itself holds production dependencies, dist/ and package.json only, and runs as the
# unprivileged `node` user (uid 1000) with nothing written outside the /data volume, so the root
# filesystem can be read-only.
#
#   docker build -t student-records-api .
#   docker run --rm -p 3000:3000 -e DB_HOST=db.example.com -e DB_PASSWORD=… -e JWT_SECRET=… student-records-api
#   docker run --rm -p 3000:3000 -v student-data:/data student-records-api   # embedded PostgreSQL
#
# With podman, build with --format docker: podman's default image format (OCI) has no
# HEALTHCHECK, and drops it.
#
# Behind a TLS-inspecting proxy, npm needs the proxy's CA certificates: put the bundle in the
# build context and name it, e.g. --build-arg NODE_EXTRA_CA_CERTS=proxy-ca.pem. It is used by
# npm ci in the build stage only, never copied into the image.

FROM node:22-bookworm-slim AS build
WORKDIR /build
# Empty unless given: no extra certificates (Node.js ignores an empty NODE_EXTRA_CA_CERTS), and
# no warning from the build about an argument left unset.
ARG NODE_EXTRA_CA_CERTS=
COPY package.json package-lock.json ${NODE_EXTRA_CA_CERTS} ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json *.ts ./
COPY db db
COPY lib lib
COPY plugins plugins
COPY routes routes
COPY schemas schemas
COPY scripts scripts
# The image has no TypeScript: its package.json runs the commands that compile first
# (`npm run migrate`, `reset-password`, `seed`, `knex`) on dist/ as it is, and `npm start` without
# building, so that they work in a container as they do in a checkout.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
 && npm pkg delete scripts.prestart \
 && npm pkg set 'scripts.migrate=node dist/scripts/migrate.js' \
      'scripts.reset-password=node dist/scripts/reset-password.js' \
      'scripts.seed=node dist/scripts/seed.js' \
      'scripts.knex=knex --knexfile dist/knexfile.js'

FROM node:22-bookworm-slim
# tini as process 1: it forwards SIGTERM to Node.js and reaps the processes Node.js does not
# (the embedded PostgreSQL's, when it is used).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /data && chown 1000:1000 /data
WORKDIR /app
# Listen on every interface of the container: the API on 3000, the metrics on 9464 (publish
# the latter only on the operators' network). DATA_DIR is the embedded PostgreSQL's, used
# when DB_HOST is unset. npm runs commands only (npm run): no asking the registry for a newer npm.
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    HOST=0.0.0.0 \
    PORT=3000 \
    METRICS_HOST=0.0.0.0 \
    METRICS_PORT=9464 \
    DATA_DIR=/data
COPY --from=build /build/package.json ./
COPY --from=build /build/node_modules node_modules
COPY --from=build /build/dist dist
VOLUME /data
USER 1000:1000
EXPOSE 3000 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health/live`).then(res => process.exit(res.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["tini", "--"]
# Migrations: `npm run migrate` (node dist/scripts/migrate.js); a lost password, in the running
# container: `npm run reset-password -- admin@example.com`.
CMD ["node", "dist/server.js"]
