export * from './alkstore-options.interface.js';
export * from './handler-options.interface.js';
