/**
 * A DEX/UCS reader written in the tests from the format's published facts (records a line, fields by
 * `*`, CR LF, DXS…ST…SE…DXE framing, SE01 = segments from ST to SE, G85 = CRC-16/ARC of every line
 * from ST up to G85 with its CR LF), independent of src/dex/. Table-driven CRC, unlike the writer's.
 */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n += 1) {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

export function crcArc(bytes: Uint8Array): number {
  let crc = 0x0000;
  for (const b of bytes) crc = (crc >>> 8) ^ TABLE[(crc ^ b) & 0xff]!;
  return crc & 0xffff;
}

export interface ParsedDex {
  records: string[][];
  byTag(tag: string): string[][];
  one(tag: string): string[];
  problems: string[];
}

export function readDex(text: string): ParsedDex {
  const problems: string[] = [];
  if (!text.endsWith('\r\n')) problems.push('the file does not end with CR LF');
  const lines = text.split('\r\n').slice(0, -1);
  if (lines.some((l) => l.includes('\n') || l.includes('\r'))) problems.push('a line end other than CR LF');
  const records = lines.map((l) => l.split('*'));
  const tags = records.map((r) => r[0]);
  if (tags[0] !== 'DXS') problems.push('does not start with DXS');
  if (tags.at(-1) !== 'DXE') problems.push('does not end with DXE');
  const st = tags.indexOf('ST');
  const se = tags.indexOf('SE');
  const g85 = tags.indexOf('G85');
  if (st < 0 || se < 0 || g85 < 0 || !(st < g85 && g85 < se)) problems.push('ST, G85, SE missing or out of order');
  else {
    if (Number(records[se]![1]) !== se - st + 1) problems.push(`SE01 ${records[se]![1]} but ${se - st + 1} segments from ST to SE`);
    const checked = lines
      .slice(st, g85)
      .map((l) => `${l}\r\n`)
      .join('');
    const crc = crcArc(new TextEncoder().encode(checked)).toString(16).toUpperCase().padStart(4, '0');
    if (records[g85]![1] !== crc) problems.push(`G85 ${records[g85]![1]}, computed ${crc}`);
  }
  return {
    records,
    problems,
    byTag: (tag) => records.filter((r) => r[0] === tag),
    one(tag) {
      const found = records.filter((r) => r[0] === tag);
      if (found.length !== 1) throw new Error(`${found.length} ${tag} records`);
      return found[0]!;
    },
  };
}
