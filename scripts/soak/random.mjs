/** mulberry32: every choice of a soak run comes from its seed, so a failing run can be replayed. */
export function createRandom(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    /** An integer in [min, max]. */
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    /** One key of `weights` ({ name: weight }), chosen in proportion to its weight. */
    weighted(weights) {
      const entries = Object.entries(weights);
      let r = next() * entries.reduce((sum, [, w]) => sum + w, 0);
      for (const [name, w] of entries) {
        if ((r -= w) < 0) return name;
      }
      return entries.at(-1)[0];
    },
  };
}
