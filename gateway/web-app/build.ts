import { rm, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";
import { iconPng, iconSizes } from "./icons.ts";

/**
 * Builds the web app into `gen/` (git-ignored) as the ES modules the gateway serves at `/app/assets/`:
 * `main.js`, and `canonical-json.js`, the `@svc/contracts` module that writes the text a person's passkey
 * signs, as its own file with its own exports (the page imports it; the Chromium test of the card digest
 * runs that same file); `service-worker.js`, served at `/app/service-worker.js`; the icons as PNG files. Type-checking is tsc's (`gateway/web-app/tsconfig.json`); `npm run build:web-app`
 * runs both, and the root `postinstall` runs it.
 */
const here = new URL("./", import.meta.url);
const genDir = fileURLToPath(new URL("gen/", here));

await rm(genDir, { recursive: true, force: true });
await build({
  input: {
    main: fileURLToPath(new URL("src/main.ts", here)),
    "canonical-json": fileURLToPath(import.meta.resolve("@svc/contracts/canonical-json")),
    "service-worker": fileURLToPath(new URL("service-worker/service-worker.ts", here)),
  },
  output: { dir: genDir, format: "es", entryFileNames: "[name].js", chunkFileNames: "[name].js" },
  logLevel: "warn",
});
for (const size of iconSizes) await writeFile(new URL(`icon-${size}.png`, `file://${genDir}`), iconPng(size));
