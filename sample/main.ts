import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { configFromEnv } from './config.js';

// `npm start` compiles with tsc first: Nest's DI needs emitDecoratorMetadata, which tsx/esbuild do not emit.
const config = configFromEnv();
const app = await NestFactory.create(AppModule.forRoot(config));
// SIGTERM / SIGINT run app.close(): alkstore stops claiming and drains in-flight handlers, then TypeORM closes.
app.enableShutdownHooks();
const port = Number(process.env.PORT ?? 3000);
await app.listen(port);
console.log(
  `alkstore sample listening on http://localhost:${port} (${config.databaseUrl ? 'PostgreSQL' : `SQLite ${config.sqlitePath}`})`,
);
