// Starts fauxqs (the SQS emulator pinned in package.json) on the loopback
// interface only: its own CLI always binds 0.0.0.0. Prints
// "listening http://127.0.0.1:PORT" once it accepts connections.
//
// Environment: FAUXQS_PORT (default 0: a free port), FAUXQS_DEFAULT_REGION
// (default us-east-1), FAUXQS_LOGGER ("true" logs every request).
import { buildApp } from "fauxqs";

const port = Number.parseInt(process.env.FAUXQS_PORT ?? "0", 10);
const app = buildApp({
  logger: process.env.FAUXQS_LOGGER === "true",
  defaultRegion: process.env.FAUXQS_DEFAULT_REGION || undefined,
});
const address = await app.listen({ port, host: "127.0.0.1" });
console.log(`listening ${address}`);

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    app.close().finally(() => process.exit(0));
  });
}
