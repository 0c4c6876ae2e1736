export { createApp, type ApiDependencies } from './app.ts';
export { readConfig, type ApiConfig } from './config.ts';
export { startApiService, type ApiService } from './server.ts';
