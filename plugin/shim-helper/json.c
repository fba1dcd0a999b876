/* Just enough JSON for the manager's answers: find a member of an object (validating the whole
 * document), decode a string, quote a string; base64 for the exec stream's output; URI components. */
#include <stdlib.h>
#include <string.h>
#include "helper.h"

#define MAX_DEPTH 64

typedef struct {
  const char *p, *end;
} cursor_t;

static void skip_ws(cursor_t *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int is_hex(char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'); }
static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static int skip_string(cursor_t *c) {
  if (c->p >= c->end || *c->p != '"') return -1;
  for (c->p++; c->p < c->end; c->p++) {
    unsigned char ch = (unsigned char)*c->p;
    if (ch == '"') {
      c->p++;
      return 0;
    }
    if (ch < 0x20) return -1;
    if (ch == '\\') {
      if (++c->p >= c->end) return -1;
      if (*c->p == 'u') {
        for (int i = 0; i < 4; i++)
          if (++c->p >= c->end || !is_hex(*c->p)) return -1;
      } else if (!strchr("\"\\/bfnrt", *c->p)) return -1;
    }
  }
  return -1;
}

static int skip_number(cursor_t *c) {
  if (c->p < c->end && *c->p == '-') c->p++;
  if (c->p >= c->end || !is_digit(*c->p)) return -1;
  if (*c->p == '0') c->p++;
  else
    while (c->p < c->end && is_digit(*c->p)) c->p++;
  if (c->p < c->end && *c->p == '.') {
    c->p++;
    if (c->p >= c->end || !is_digit(*c->p)) return -1;
    while (c->p < c->end && is_digit(*c->p)) c->p++;
  }
  if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
    c->p++;
    if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
    if (c->p >= c->end || !is_digit(*c->p)) return -1;
    while (c->p < c->end && is_digit(*c->p)) c->p++;
  }
  return 0;
}

static int skip_literal(cursor_t *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return -1;
  c->p += n;
  return 0;
}

/* Skips one value, recording it in v; -1 if it is not valid JSON. */
static int skip_value(cursor_t *c, jval_t *v, int depth) {
  skip_ws(c);
  if (c->p >= c->end || depth > MAX_DEPTH) return -1;
  const char *start = c->p;
  int r;
  char ch = *c->p;
  if (ch == '"') v->type = J_STRING, r = skip_string(c);
  else if (ch == 't') v->type = J_TRUE, r = skip_literal(c, "true");
  else if (ch == 'f') v->type = J_FALSE, r = skip_literal(c, "false");
  else if (ch == 'n') v->type = J_NULL, r = skip_literal(c, "null");
  else if (ch == '{' || ch == '[') {
    char close = ch == '{' ? '}' : ']';
    v->type = ch == '{' ? J_OBJECT : J_ARRAY;
    c->p++;
    skip_ws(c);
    r = 0;
    if (c->p < c->end && *c->p == close) c->p++;
    else
      for (;;) {
        jval_t inner;
        if (ch == '{') {
          skip_ws(c);
          if (skip_string(c) < 0) return -1;
          skip_ws(c);
          if (c->p >= c->end || *c->p++ != ':') return -1;
        }
        if (skip_value(c, &inner, depth + 1) < 0) return -1;
        skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') {
          c->p++;
          continue;
        }
        if (*c->p++ != close) return -1;
        break;
      }
  } else v->type = J_NUMBER, r = skip_number(c);
  v->start = start;
  v->len = (size_t)(c->p - start);
  return r;
}

/* Whether the string literal at `lit` (a J_STRING span) equals key, comparing decoded text. */
static int key_equals(jval_t lit, const char *key) {
  buf_t text = {0};
  int same = json_string(lit, &text) == 0 && text.len == strlen(key) && memcmp(text.data, key, text.len) == 0;
  free(text.data);
  return same;
}

int json_get(const char *s, size_t n, const char *key, jval_t *out) {
  cursor_t c = {s, s + n};
  jval_t whole;
  if (skip_value(&c, &whole, 0) < 0 || whole.type != J_OBJECT) return -1;
  skip_ws(&c);
  if (c.p != c.end) return -1;
  /* Valid: walk the top-level members. The last duplicate wins, as in JSON.parse. */
  int found = 0;
  c.p = whole.start + 1;
  skip_ws(&c);
  if (*c.p == '}') return 0;
  for (;;) {
    jval_t name, value;
    skip_ws(&c);
    skip_value(&c, &name, 0);
    skip_ws(&c);
    c.p++; /* ':' */
    skip_value(&c, &value, 1);
    if (key_equals(name, key)) {
      *out = value;
      found = 1;
    }
    skip_ws(&c);
    if (*c.p++ != ',') break;
  }
  return found;
}

static void put_utf8(buf_t *out, unsigned cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) b[0] = (char)cp, n = 1;
  else if (cp < 0x800) b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000) b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  else b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)), b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  buf_put(out, b, n);
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) v = v * 16 + (unsigned)(is_digit(p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
  return v;
}

int json_string(jval_t v, buf_t *out) {
  if (v.type != J_STRING || v.len < 2) return -1;
  const char *p = v.start + 1, *end = v.start + v.len - 1;
  buf_put(out, "", 0);
  while (p < end) {
    if (*p != '\\') {
      buf_put(out, p++, 1);
      continue;
    }
    char e = p[1];
    p += 2;
    if (e == 'u') {
      unsigned cp = hex4(p);
      p += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        unsigned low = hex4(p + 2);
        if (low >= 0xDC00 && low < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          p += 6;
        }
      }
      if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* a lone surrogate, as TextEncoder writes it */
      put_utf8(out, cp);
    } else {
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      buf_put(out, to + (strchr(from, e) - from), 1);
    }
  }
  return 0;
}

/* Length of the valid UTF-8 sequence at s (no overlongs, surrogates or > U+10FFFF), 0 if invalid. */
static size_t utf8_len(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) return (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    unsigned lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    unsigned lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
  }
  return 0;
}

int json_quote(buf_t *out, const char *s) {
  buf_put(out, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = utf8_len(p);
    if (n == 0) return -1;
    if (*p == '"' || *p == '\\') buf_printf(out, "\\%c", *p);
    else if (*p == '\n') buf_puts(out, "\\n");
    else if (*p == '\t') buf_puts(out, "\\t");
    else if (*p == '\r') buf_puts(out, "\\r");
    else if (*p < 0x20) buf_printf(out, "\\u%04x", *p);
    else buf_put(out, p, n);
    p += n;
  }
  buf_put(out, "\"", 1);
  return 0;
}

static int b64_value(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

int base64_decode(const char *s, size_t n, buf_t *out) {
  unsigned acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < n && s[i] != '='; i++) {
    int v = b64_value((unsigned char)s[i]);
    if (v < 0) return -1;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      char byte = (char)((acc >> bits) & 0xFF);
      buf_put(out, &byte, 1);
    }
  }
  for (; i < n; i++)
    if (s[i] != '=') return -1;
  return 0;
}

void uri_component(buf_t *out, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || is_digit((char)*p) || strchr("-_.!~*'()", *p)) buf_put(out, p, 1);
    else buf_printf(out, "%%%02X", *p);
  }
}
