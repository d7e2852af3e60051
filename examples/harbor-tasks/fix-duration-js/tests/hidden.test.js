'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseDuration, formatDuration } = require('/app/src/duration.js');

test('parse: every unit, spaces, sign', () => {
  const cases = [
    ['1d2h', 93600000], ['250ms', 250], ['2m0s', 120000], ['1h 30m', 5400000], ['1s500ms', 1500],
    ['1d1h1m1s1ms', 90061001], ['-1m30s', -90000], ['  45s ', 45000], ['0s', 0], ['1m 5ms', 60005],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
});

test('parse: refusals', () => {
  for (const bad of ['', '10', '1x', '1m1h', '1h1h', '1.5h', 'ms', '-', '1msx', '5s 5ms 1d']) {
    assert.throws(() => parseDuration(bad), TypeError, JSON.stringify(bad));
  }
  assert.throws(() => parseDuration(42), TypeError);
});

test('format: canonical form', () => {
  const cases = [
    [90000, '1m30s'], [0, '0s'], [1500, '1s500ms'], [3600000, '1h'], [3661000, '1h1m1s'],
    [90061001, '1d1h1m1s1ms'], [-90000, '-1m30s'], [999, '999ms'], [86400000 * 3 + 5, '3d5ms'], [60000 * 61, '1h1m'],
  ];
  for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, String(ms));
  assert.throws(() => formatDuration(1.5), TypeError);
});

test('round trip', () => {
  for (let ms = -200000; ms <= 200000000; ms += 7777777) {
    assert.equal(parseDuration(formatDuration(ms)), ms);
  }
});
