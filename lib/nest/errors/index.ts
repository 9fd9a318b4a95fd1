export * from './invalid-handler.error.js';
export * from './scheduler-conflict.error.js';
