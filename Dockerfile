# syntax=docker/dockerfile:1
# Every image of the system, one target each, built with the repository root as the context:
#   docker build --target api        -t trips/api .
#   docker build --target recorder   -t trips/recorder .
#   docker build --target dispatcher -t trips/dispatcher .
#   docker build --target migrate    -t trips/migrate .   (tripctl; its default command migrates)
#   docker build --target demo       -t trips/demo .      (docker-compose.yml's demo services only)
#
# No build step: Node 24 strips the TypeScript types when it loads the .ts sources, so an image
# runs src/ of its package and of the workspace packages it imports (their exports point at
# ./src/index.ts). Why not `pnpm deploy`: it copies workspace packages into node_modules, and
# Node refuses to strip types there (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING). A production
# install of one package of the workspace instead links them from packages/ and services/, outside
# node_modules, and installs no devDependencies. test/deploy/images.test.ts checks each target
# against the package.json files, replays its build and start steps, and starts the result.

ARG NODE_IMAGE=node:24-slim

# --- workspace: pnpm, the dependency store and the sources, shared by every target's install
FROM ${NODE_IMAGE} AS workspace
# The root package.json's packageManager (test/deploy checks that they agree).
ARG PNPM_VERSION=10.34.9
RUN npm install --global --no-audit --no-fund "pnpm@${PNPM_VERSION}"
WORKDIR /workspace
# The lockfile alone decides the download layer, so it stays cached until a dependency changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json .npmrc ./
RUN pnpm fetch --prod
COPY packages packages
COPY services services

# --- the production dependency tree of one package each
FROM workspace AS api-install
RUN pnpm install --offline --frozen-lockfile --prod --filter "@trips/api..."

FROM workspace AS recorder-install
RUN pnpm install --offline --frozen-lockfile --prod --filter "@trips/recorder..."

FROM workspace AS dispatcher-install
RUN pnpm install --offline --frozen-lockfile --prod --filter "@trips/dispatcher..."

FROM workspace AS tripctl-install
RUN pnpm install --offline --frozen-lockfile --prod --filter "@trips/tripctl..."

# --- what every runtime image has: Node without the build tools, tini, an unprivileged user
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1 forwards SIGTERM to node, which stops gracefully within the service's stop
# deadline, and reaps zombies; node is not written to run as PID 1.
RUN apt-get update \
  && apt-get install --yes --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
ENTRYPOINT ["/usr/bin/tini", "--"]

# Each target copies node_modules and exactly its package with the workspace packages it imports
# (its workspace dependency closure, which test/deploy checks against the package.json files),
# owned by root: the app cannot change its code. It runs as the node image's unprivileged user, by
# number so that Kubernetes' runAsNonRoot can verify it, and its command is the package's start
# script run by node itself: an npm or pnpm in between would not pass SIGTERM on. The services'
# start scripts fix V8's young generation at 16 MB semi-spaces: V8 would size it from the memory it
# sees and grow and shrink it with the load, RSS following in steps (docs/benchmarks.md, "Soak").

# --- the read API and the settings page, /healthz and /readyz on PORT
FROM runtime AS api
COPY --from=api-install /workspace/node_modules /app/node_modules
COPY --from=api-install /workspace/packages/broker /app/packages/broker
COPY --from=api-install /workspace/packages/contracts /app/packages/contracts
COPY --from=api-install /workspace/packages/db /app/packages/db
COPY --from=api-install /workspace/packages/runtime /app/packages/runtime
COPY --from=api-install /workspace/packages/settings /app/packages/settings
COPY --from=api-install /workspace/services/api /app/services/api
WORKDIR /app/services/api
USER 1000:1000
EXPOSE 3000
CMD ["node", "--max-semi-space-size=16", "--min-semi-space-size=16", "src/main.ts"]

# --- the recorder (outbox relay), /healthz and /readyz on RECORDER_HEALTH_PORT
FROM runtime AS recorder
COPY --from=recorder-install /workspace/node_modules /app/node_modules
COPY --from=recorder-install /workspace/packages/broker /app/packages/broker
COPY --from=recorder-install /workspace/packages/contracts /app/packages/contracts
COPY --from=recorder-install /workspace/packages/db /app/packages/db
COPY --from=recorder-install /workspace/packages/runtime /app/packages/runtime
COPY --from=recorder-install /workspace/services/recorder /app/services/recorder
WORKDIR /app/services/recorder
USER 1000:1000
EXPOSE 3001
CMD ["node", "--max-semi-space-size=16", "--min-semi-space-size=16", "src/main.ts"]

# --- the dispatcher (webhook deliveries), /healthz and /readyz on DISPATCHER_HEALTH_PORT
FROM runtime AS dispatcher
COPY --from=dispatcher-install /workspace/node_modules /app/node_modules
COPY --from=dispatcher-install /workspace/packages/broker /app/packages/broker
COPY --from=dispatcher-install /workspace/packages/contracts /app/packages/contracts
COPY --from=dispatcher-install /workspace/packages/db /app/packages/db
COPY --from=dispatcher-install /workspace/packages/runtime /app/packages/runtime
COPY --from=dispatcher-install /workspace/packages/settings /app/packages/settings
COPY --from=dispatcher-install /workspace/services/dispatcher /app/services/dispatcher
WORKDIR /app/services/dispatcher
USER 1000:1000
EXPOSE 3002
CMD ["node", "--max-semi-space-size=16", "--min-semi-space-size=16", "src/main.ts"]

# --- tripctl, the admin CLI. Its default command applies the pending database migrations: run it
# once per release, before the services (the compose migrate service, k8s/base/migrate/job.yaml).
# Every other tripctl command runs in it too, e.g.
#   docker run --rm -e DATABASE_URL trips/migrate node src/main.ts webhook list --agency agy_…
FROM runtime AS migrate
COPY --from=tripctl-install /workspace/node_modules /app/node_modules
COPY --from=tripctl-install /workspace/packages/broker /app/packages/broker
COPY --from=tripctl-install /workspace/packages/contracts /app/packages/contracts
COPY --from=tripctl-install /workspace/packages/db /app/packages/db
COPY --from=tripctl-install /workspace/packages/runtime /app/packages/runtime
COPY --from=tripctl-install /workspace/packages/settings /app/packages/settings
COPY --from=tripctl-install /workspace/packages/tripctl /app/packages/tripctl
WORKDIR /app/packages/tripctl
USER 1000:1000
CMD ["node", "src/main.ts", "migrate"]

# --- demo only: docker-compose.yml's demo-setup and demo-receiver services. tripctl (to seed a
# demo agency and register a webhook), openssl (for a throwaway CA and the receiver's
# certificate) and the two scripts in infra/demo.
FROM migrate AS demo
USER root
RUN apt-get update \
  && apt-get install --yes --no-install-recommends openssl \
  && rm -rf /var/lib/apt/lists/*
COPY infra/demo /app/infra/demo
# The shared `demo` volume is mounted here; a fresh named volume takes this owner, so the
# unprivileged user can write the certificates and the demo state into it.
RUN mkdir /demo && chown 1000:1000 /demo
WORKDIR /app/infra/demo
USER 1000:1000
# demo-setup runs `node setup.mts` instead.
CMD ["node", "receiver.mts"]
