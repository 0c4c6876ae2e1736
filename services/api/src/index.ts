export { createApp, type ApiDependencies } from './app.ts';
export { loadConfig, type ApiConfig } from './config.ts';
export { startApi, type RunningApi } from './server.ts';
