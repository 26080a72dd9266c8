# A Sluice worker image in two stages (docker-compose.yml builds it for sluice-setup and the
# workers). test/docker.test.ts runs these steps in a clean folder as a build would, then starts
# the resulting worker against a Temporal server.

# Build: every dependency (tsc is a devDependency) with install scripts off, then the sources,
# dist/, the package as npm would publish it, and the worker app's package.json.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build && mkdir -p image && npm pack --ignore-scripts --pack-destination image && mv image/sluice-*.tgz image/sluice.tgz && node scripts/worker-app.js image

# Runtime: a worker app holding Sluice's dist/ (from the tarball), its production dependencies
# and the worker's optional parts; no sources, no devDependencies. The demo config is the one
# SLUICE_CONFIG names in docker-compose.yml: replace it with your own.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /src/image/ ./
RUN npm install --omit=dev --no-audit --no-fund
COPY sluice.config.ts ./
CMD ["npx", "sluice", "worker"]
