# ctxgate container image: the compiled gateway on the current Node LTS, production dependencies only,
# running as a non-root user. It runs exactly what `npm run build` produces, as `npm start` does.

# --- build: compile TypeScript with the dev dependencies
FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- runtime: production dependencies and the compiled output only
FROM node:26-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
COPY ui ./ui
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node runs as PID 1 and receives SIGTERM itself, which starts the graceful drain.
CMD ["node", "--max-semi-space-size=32", "--no-allocation-site-pretenuring", "dist/src/main.js"]
