import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const PUBLIC = new URL('../../src/kiosk/public/', import.meta.url).pathname;
const LANGUAGES = ['mn', 'kk', 'ru', 'en'] as const;
const read = (path: string) => readFileSync(join(PUBLIC, path), 'utf8');
const dictionary = (lang: string): Record<string, unknown> => JSON.parse(read(`i18n/${lang}.json`));
const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe('kiosk page translations', () => {
  const reference = dictionary('en');

  it.each(LANGUAGES)('%s has exactly the keys of every other language, none missing and none extra', (lang) => {
    const keys = Object.keys(dictionary(lang)).sort();
    for (const other of LANGUAGES) expect(keys, `${lang} vs ${other}`).toEqual(Object.keys(dictionary(other)).sort());
  });

  it.each(LANGUAGES)('%s translates every key to a non-empty text with the same {placeholders}', (lang) => {
    for (const [key, text] of Object.entries(dictionary(lang))) {
      expect(typeof text, `${lang}.${key}`).toBe('string');
      expect((text as string).trim(), `${lang}.${key}`).not.toBe('');
      expect(placeholders(text as string), `${lang}.${key}`).toEqual(placeholders(reference[key] as string));
    }
  });

  it('has a language file for each language the settings allow and no other', () => {
    expect(readdirSync(join(PUBLIC, 'i18n')).sort()).toEqual(LANGUAGES.map((l) => `${l}.json`).sort());
  });

  it('defines every key the page asks for, and the page asks for every key defined', () => {
    const html = read('index.html');
    const script = read('app.js');
    const fromHtml = [...html.matchAll(/data-i18n="(\w+)"/g)].map((m) => m[1]!);
    // Keys the script names explicitly: t('…'), t(x ? '…' : '…'), t(x ?? '…'), the error table, key: '…', the provider table.
    const keyPattern =
      /\bt\('(\w+)'|\bt\([^)]*\? '(\w+)' : '(\w+)'\)|\bt\([^)]*\?\? '(\w+)'\)|\bkey: '(\w+)'|^\s+VG_ERR_\w+: '(\w+)'|^\s+(?:sandbox|gerege|qutpay): '(\w+)'/gm;
    const fromScript = [...script.matchAll(keyPattern)].flatMap((m) => m.slice(1).filter(Boolean) as string[]);
    const defined = new Set(Object.keys(reference));
    expect([...fromHtml, ...fromScript].filter((key) => !defined.has(key))).toEqual([]);
    // Every defined key appears somewhere as a literal ('key' in the script, data-i18n in the page).
    const literals = new Set([...fromHtml, ...[...script.matchAll(/'(\w+)'/g)].map((m) => m[1]!)]);
    expect([...defined].filter((key) => !literals.has(key))).toEqual([]);
  });
});

describe('kiosk page', () => {
  it('stays under 60 KB uncompressed, translations included', () => {
    const total = (dir: string): number =>
      readdirSync(dir).reduce((sum, name) => {
        const path = join(dir, name);
        return sum + (statSync(path).isDirectory() ? total(path) : statSync(path).size);
      }, 0);
    expect(total(PUBLIC)).toBeLessThan(60 * 1024);
  });

  it('never writes markup from data: no innerHTML, outerHTML, insertAdjacentHTML, document.write or eval', () => {
    const scripts = readdirSync(PUBLIC).filter((name) => name.endsWith('.js'));
    expect(scripts).toContain('app.js');
    for (const file of [...scripts, '../sandbox/pay.js']) {
      expect(read(file), file).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    }
  });

  it('loads no inline script or style, so the self-only CSP holds', () => {
    const html = read('index.html');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style|\son\w+=/);
  });

  it('sets a base font of at least 24 px', () => {
    expect(read('style.css')).toMatch(/:root\s*{[^}]*font-size:\s*max\(24px,/);
  });
});
