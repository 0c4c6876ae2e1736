export { readConfig, eventsExchange, type RecorderConfig } from './config.ts';
export { CATALOGUE, classify, changeOf, type Change, type Effect, type Rule } from './catalogue.ts';
export { Recorder, planBatch, type RecorderOptions, type BatchResult } from './recorder.ts';
export { Publisher, type PublisherOptions } from './publisher.ts';
export { startRecorderService, type RecorderService } from './service.ts';
export { toMessage } from './message.ts';
