import { execFileSync, execSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The repository at another commit, runnable beside this checkout: its files from `git archive` in a temporary
 * directory, with a node_modules whose packages are links to this checkout's and whose workspace links point at the
 * commit's own workspaces, and the commit's own generated code and builds. Made once per commit and reused while it
 * links to this same install (after another checkout's, or an `npm ci` that changed the lock, links point nowhere).
 * A commit that locks a package this checkout lacks, or has at another version (one from before a dependency was
 * dropped or upgraded), gets an install of its own instead: `npm ci` in the checkout, about a minute, kept while
 * the commit is.
 */
const root = fileURLToPath(new URL("../../", import.meta.url));

const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();

type Lock = { packages: Record<string, { version?: string; link?: boolean; resolved?: string }> };

export function checkoutAt(ref: string): { root: string; commit: string } {
  const commit = git("rev-parse", "--verify", `${ref}^{commit}`);
  const dir = join(tmpdir(), `svc-checkout-${commit.slice(0, 12)}`);
  const ready = join(dir, ".svc-checkout-ready");
  const lockHash = createHash("sha256")
    .update(readFileSync(join(root, "package-lock.json")))
    .digest("hex");
  const linkedStamp = `${commit}\n${root}\n${lockHash}\n`;
  const ownInstallStamp = `${commit}\nits own install\n`;
  if (existsSync(ready) && [linkedStamp, ownInstallStamp].includes(readFileSync(ready, "utf8")))
    return { root: dir, commit };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execSync(`git archive ${commit} | tar -x -C ${JSON.stringify(dir)}`, { cwd: root });
  // The commit's scripts run on this checkout's Node (24), which its own node_modules/.bin may not have yet.
  const env = { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH}` };

  const theirs = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8")) as Lock;
  const ours = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as Lock;
  const differs = Object.entries(theirs.packages).some(
    ([path, entry]) => path.includes("node_modules/") && !entry.link && ours.packages[path]?.version !== entry.version,
  );
  if (differs) {
    process.stderr.write(`${ref} locks packages this checkout has not: npm ci in ${dir}\n`);
    // Its postinstall makes its generated code and builds, as on a fresh clone.
    execSync("npm ci --no-audit --no-fund", { cwd: dir, stdio: ["ignore", "ignore", "inherit"], env });
    writeFileSync(ready, ownInstallStamp);
    return { root: dir, commit };
  }
  for (const entry of readdirSync(join(root, "node_modules"))) {
    if (entry === "@svc" || entry.startsWith(".package-lock")) continue;
    linkInto(join(dir, "node_modules", entry), join(root, "node_modules", entry));
  }
  // Packages a workspace keeps in a node_modules of its own (those nested in a package come with it).
  for (const path of Object.keys(theirs.packages))
    if (!path.startsWith("node_modules/") && path.indexOf("node_modules/") === path.lastIndexOf("node_modules/"))
      linkInto(join(dir, path), join(root, path));
  for (const [path, entry] of Object.entries(theirs.packages))
    if (path.startsWith("node_modules/@svc/") && entry.link) {
      linkInto(join(dir, path), join(dir, entry.resolved ?? ""), true);
    }

  // The commit's own generated code and builds: its postinstall, less what only a deployment needs (kubectl).
  const scripts = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts;
  for (const step of (scripts.postinstall ?? "").split("&&").map((s) => s.trim()))
    if (step !== "" && !step.includes("kubectl"))
      execSync(step, { cwd: dir, stdio: ["ignore", "ignore", "inherit"], env });
  writeFileSync(ready, linkedStamp);
  return { root: dir, commit };
}

function linkInto(path: string, target: string, relativeLink = false): void {
  mkdirSync(dirname(path), { recursive: true });
  if (!existsSync(target) || existsSync(path)) return;
  symlinkSync(relativeLink ? relative(dirname(path), target) : target, path);
}
