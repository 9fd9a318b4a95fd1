export * from './outbox-handler.decorator.js';
export * from './queue-handler.decorator.js';
export * from './scheduled.decorator.js';
export * from './inject.decorators.js';
export * from './on-worker-event.decorator.js';
export * from './typed-method-decorator.js';
