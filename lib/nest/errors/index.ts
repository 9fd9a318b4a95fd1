export * from './invalid-handler.error.js';
