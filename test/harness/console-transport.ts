/** For tests and benches outside the `test` workspace, which reach deploy/local through the harness. */
export { consoleTransport } from "@svc/local-mesh/console-client";
