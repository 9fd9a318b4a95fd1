/** Injection token of the resolved `AlkstoreBrokersModule` options. */
export const ALKSTORE_BROKERS_OPTIONS = 'alkstore:brokers-options';
/** Metadata key of `@InboxHandler` (a list per method). */
export const INBOX_HANDLER_METADATA = 'alkstore:inbox-handler';
/** Metadata key of `@InboxEvent`. */
export const INBOX_EVENT_METADATA = 'alkstore:inbox-event';
