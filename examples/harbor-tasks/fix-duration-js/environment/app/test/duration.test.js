'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseDuration, formatDuration } = require('../src/duration');

test('parses hours and minutes', () => {
  assert.equal(parseDuration('1h30m'), 5400000);
});

test('parses milliseconds', () => {
  assert.equal(parseDuration('250ms'), 250);
});

test('formats with carried units', () => {
  assert.equal(formatDuration(90000), '1m30s');
  assert.equal(formatDuration(0), '0s');
});
