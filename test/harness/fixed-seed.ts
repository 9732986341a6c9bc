import fc from "fast-check";

/**
 * Every property test in `npm test` runs on one fixed seed, so a red run is red again on the next one;
 * fast-check prints the seed and path of a failure, and FC_SEED replays it. Random exploration is
 * `npm run fuzz`'s (it picks and prints its own seed).
 */
const seed = Number(process.env.FC_SEED ?? 20261128);
if (!Number.isInteger(seed)) throw new Error(`FC_SEED must be an integer: ${process.env.FC_SEED}`);
fc.configureGlobal({ seed });
