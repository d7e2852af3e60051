'use strict';
/*
 * Compact durations: a sequence of <integer><unit> parts, units d, h, m, s, ms
 * (days, hours, minutes, seconds, milliseconds), e.g. "1d2h", "1h30m", "250ms",
 * "2m0s". Whitespace between parts is allowed ("1h 30m"); each unit at most once,
 * in that order (largest first). A leading "-" negates the whole duration.
 *
 * parseDuration(text) -> integer milliseconds; throws TypeError for anything else
 *   ("", "10", "1x", "1m1h", "1h1h", "1.5h").
 * formatDuration(ms) -> the canonical form: the largest units first, zero parts
 *   left out, "0s" for zero, a leading "-" for negative values. Milliseconds are
 *   an integer; 90061001 -> "1d1h1m1s1ms".
 */

const UNITS = { d: 86400000, h: 3600000, m: 60000, s: 1000, ms: 1 };
const ORDER = ['d', 'h', 'm', 's', 'ms'];

function parseDuration(text) {
  if (typeof text !== 'string') throw new TypeError('duration must be a string');
  let rest = text.trim();
  let sign = 1;
  if (rest.startsWith('-')) {
    sign = -1;
    rest = rest.slice(1);
  }
  const part = /(\d+)\s*(d|h|m|s|ms)\s*/y;
  let total = 0;
  let seen = 0;
  let last = -1;
  while (rest.length) {
    part.lastIndex = 0;
    const match = part.exec(rest);
    if (!match) throw new TypeError(`bad duration: ${text}`);
    const index = ORDER.indexOf(match[2]);
    if (index <= last) throw new TypeError(`bad duration: ${text}`);
    last = index;
    total += Number(match[1]) * UNITS[match[2]];
    seen += 1;
    rest = rest.slice(match[0].length);
  }
  if (!seen) throw new TypeError(`bad duration: ${text}`);
  return sign * total;
}

function formatDuration(ms) {
  if (!Number.isInteger(ms)) throw new TypeError('milliseconds must be an integer');
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  let out = '';
  for (const unit of ORDER) {
    const size = UNITS[unit];
    if (rest >= size && (unit === 'ms' || rest % size === 0)) {
      out += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return sign + (out || `${rest}ms`);
}

module.exports = { parseDuration, formatDuration };
