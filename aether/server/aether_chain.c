/*
 * aether_chain: a Redis module with one command, AETHER.CHAIN, that appends a journal
 * entry to aether's hash chain. It does in C what journal.lua's chained_xadd does in Lua
 * for a write (decision 0007, "Library 28"): the digests of the keys the write touched,
 * the entry's hash, the XADD and the move of the head. The chain it writes is the one the
 * Lua library writes, byte for byte (tests/test_chain_module.py compares them), so a
 * journal verifies the same whichever wrote it, and a server without this module (any
 * Redis Stack) runs the Lua path.
 *
 * What it changes is replicated as plain HDEL, XADD and HSET commands (RedisModule_Call
 * with '!'), so an AOF or a replica never needs the module.
 *
 *   AETHER.CHAIN journal digests id nfields field... [key mode ...]...
 *
 * field...: the entry's fields, in order (names and values), before 'd', 'p' and 'h'.
 * Each key the write touched, in order, with how its digest is found:
 *   key G                  gone: no digest ('')
 *   key N count item...    a list created by appends: folded from the list base
 *   key E count item...    appends to a list that existed: folded from the digest kept
 *                          for it (the whole list read when none is kept, or '~')
 *   key T text             a JSON document written whole: the digest of its text
 *   key P digest           computed by the caller
 * Replies the entry's id. Replies an error starting with AETHERCHAIN, having changed
 * nothing, when the digests hash has no head yet (an older library's journal, or a new
 * one: the Lua path then writes its first entry) or when the arguments do not parse.
 *
 * Only the parts of the module API it uses are declared here; they are looked up by name
 * when the module loads, as redismodule.h's RedisModule_Init does.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleCallReply RedisModuleCallReply;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct {
    uint64_t ms, seq;
} StreamID;
typedef int (*CmdFunc)(RedisModuleCtx *, RedisModuleString **, int);

#define MOD_OK 0
#define MOD_ERR 1
#define APIVER_1 1
#define REPLY_STRING 0
#define REPLY_ERROR 1
#define REPLY_ARRAY 3
#define KEY_READ 1
#define KEY_WRITE 2
#define KEYTYPE_EMPTY 0
#define KEYTYPE_LIST 2
#define KEYTYPE_HASH 3
#define KEYTYPE_STREAM 7
#define HASH_NONE 0
#define HASH_DELETE ((RedisModuleString *)(long)1)
#define STREAM_ADD_AUTOID 1

static int (*GetApi)(const char *, void *);
static int (*IsModuleNameBusy)(const char *);
static void (*SetModuleAttribs)(RedisModuleCtx *, const char *, int, int);
static int (*CreateCommand)(RedisModuleCtx *, const char *, CmdFunc, const char *, int, int,
                            int);
static void (*AutoMemory)(RedisModuleCtx *);
static const char *(*StringPtrLen)(const RedisModuleString *, size_t *);
static RedisModuleString *(*CreateString)(RedisModuleCtx *, const char *, size_t);
static RedisModuleCallReply *(*Call)(RedisModuleCtx *, const char *, const char *, ...);
static int (*CallReplyType)(RedisModuleCallReply *);
static size_t (*CallReplyLength)(RedisModuleCallReply *);
static RedisModuleCallReply *(*CallReplyArrayElement)(RedisModuleCallReply *, size_t);
static const char *(*CallReplyStringPtr)(RedisModuleCallReply *, size_t *);
static int (*ReplyWithCallReply)(RedisModuleCtx *, RedisModuleCallReply *);
static int (*ReplyWithError)(RedisModuleCtx *, const char *);
static int (*WrongArity)(RedisModuleCtx *);
static int (*ReplyWithStringBuffer)(RedisModuleCtx *, const char *, size_t);
static RedisModuleKey *(*OpenKey)(RedisModuleCtx *, RedisModuleString *, int);
static void (*CloseKey)(RedisModuleKey *);
static int (*KeyType)(RedisModuleKey *);
static int (*HashGet)(RedisModuleKey *, int, ...);
static int (*HashSet)(RedisModuleKey *, int, ...);
static int (*StreamAdd)(RedisModuleKey *, int, StreamID *, RedisModuleString **, int64_t);
static int (*Replicate)(RedisModuleCtx *, const char *, const char *, ...);
static size_t (*ValueLength)(RedisModuleKey *);
static RedisModuleString *(*ListGet)(RedisModuleKey *, long);
static void (*FreeString)(RedisModuleCtx *, RedisModuleString *);
static int (*ReplyWithArray)(RedisModuleCtx *, long);
static int (*ReplyWithLongLong)(RedisModuleCtx *, long long);
static void *(*Alloc)(size_t);
static void *(*Realloc)(void *, size_t);
static void (*Free)(void *);

/* journal.lua's constants: the framing and the digests must stay the same. */
#define HEAD_FIELD "(head)"
#define GENESIS "0000000000000000000000000000000000000000"
#define LIST_BASE "aether-list-digest"
#define UNSETTLED "~"
#define LONG_VALUE 1024
#define JSON_TYPE "ReJSON-RL|"
#define HEX 40

/* -- bytes ---------------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static void buf_put(Buf *b, const void *s, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->p = b->p ? Realloc(b->p, cap) : Alloc(cap);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void buf_byte(Buf *b, unsigned char c) { buf_put(b, &c, 1); }

static void buf_be(Buf *b, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) buf_byte(b, (unsigned char)(v >> (8 * i)));
}

/* msgpack as Redis's cmsgpack packs an array of strings. */
static void mp_array(Buf *b, size_t n) {
    if (n <= 15) {
        buf_byte(b, 0x90 | (unsigned char)n);
    } else if (n <= 0xffff) {
        buf_byte(b, 0xdc);
        buf_be(b, n, 2);
    } else {
        buf_byte(b, 0xdd);
        buf_be(b, n, 4);
    }
}

static void mp_str(Buf *b, const char *s, size_t n) {
    if (n < 32) {
        buf_byte(b, 0xa0 | (unsigned char)n);
    } else if (n <= 0xff) {
        buf_byte(b, 0xd9);
        buf_be(b, n, 1);
    } else if (n <= 0xffff) {
        buf_byte(b, 0xda);
        buf_be(b, n, 2);
    } else {
        buf_byte(b, 0xdb);
        buf_be(b, n, 4);
    }
    buf_put(b, s, n);
}

/* -- hashes --------------------------------------------------------------------------- */

static void hexify(const unsigned char md[SHA_DIGEST_LENGTH], char out[HEX]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
}

/* '<length><sep>' as journal.lua writes it ('<length>:' or '<length>#'); its length. */
static int length_prefix(char out[24], size_t len, char sep) {
    char digits[22];
    int n = 0;
    do {
        digits[n++] = (char)('0' + len % 10);
        len /= 10;
    } while (len);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    out[n] = sep;
    return n + 1;
}

static void sha_framed(SHA_CTX *c, const char *v, size_t len) {
    char prefix[24];
    SHA1_Update(c, prefix, (size_t)length_prefix(prefix, len, ':'));
    SHA1_Update(c, v, len);
}

static void sha_hex_final(SHA_CTX *c, char out[HEX]) {
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1_Final(md, c);
    hexify(md, out);
}

/* One step of journal.lua's list_digest: d(items + x) = sha1(d(items) .. framed(x)), into
 * `d` (HEX bytes; `prev`, which may be `d` itself, shorter for the list base). */
static void fold_item(const char *prev, size_t prev_len, const char *item, size_t len,
                      char d[HEX]) {
    SHA_CTX c;
    SHA1_Init(&c);
    SHA1_Update(&c, prev, prev_len);
    sha_framed(&c, item, len);
    sha_hex_final(&c, d); /* after `prev` is read: it may be `d` */
}

/* The items given (at least one) folded onto `from`, into `d`. */
static void list_fold(const char *from, size_t from_len, RedisModuleString **items, size_t n,
                      char d[HEX]) {
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *item = StringPtrLen(items[i], &len);
        fold_item(i ? d : from, i ? HEX : from_len, item, len, d);
    }
}

/* Folds the items [start, end) of the list open at `key` onto `from` (journal.lua's
 * list_digest), into d; the items folded. */
static long long fold_list(RedisModuleCtx *ctx, RedisModuleKey *key, const char *from,
                           size_t from_len, long long start, long long end, char d[HEX]) {
    long long folded = 0;
    for (long long i = start; i < end; i++) {
        RedisModuleString *item = ListGet(key, (long)i);
        if (item == NULL) break;
        size_t len;
        const char *bytes = StringPtrLen(item, &len);
        fold_item(folded ? d : from, folded ? HEX : from_len, bytes, len, d);
        FreeString(ctx, item);
        folded++;
    }
    if (folded == 0) memcpy(d, from, from_len < HEX ? from_len : HEX);
    return folded;
}

/* The digest of a whole list, as journal.lua's content_digest; MOD_ERR when not a list. */
static int list_content(RedisModuleCtx *ctx, RedisModuleString *name, char d[HEX]) {
    RedisModuleKey *key = OpenKey(ctx, name, KEY_READ);
    if (KeyType(key) != KEYTYPE_LIST) return MOD_ERR;
    long long len = (long long)ValueLength(key);
    if (len == 0) return MOD_ERR;
    fold_list(ctx, key, LIST_BASE, sizeof(LIST_BASE) - 1, 0, len, d);
    return MOD_OK;
}

/* -- the command ---------------------------------------------------------------------- */

typedef struct {
    RedisModuleString *key;
    char mode;
    int first, count; /* the items (N, E) or the one value (T, P) among argv */
    char digest[HEX];
    size_t digest_len; /* 0: gone */
} Touched;

static int refuse(RedisModuleCtx *ctx, const char *why) { return ReplyWithError(ctx, why); }

static int parse_count(RedisModuleString *s, long long *out) {
    size_t len;
    const char *p = StringPtrLen(s, &len);
    if (len == 0 || len > 18) return MOD_ERR;
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return MOD_ERR;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return MOD_OK;
}

/* A value of an entry's framing: '<length>:<value>', or '<length>#<its sha1>' when long. */
static void sha_value(SHA_CTX *c, const char *v, size_t len) {
    if (len <= LONG_VALUE) {
        sha_framed(c, v, len);
        return;
    }
    SHA_CTX inner;
    char prefix[24], hex[HEX];
    SHA1_Init(&inner);
    SHA1_Update(&inner, v, len);
    sha_hex_final(&inner, hex);
    SHA1_Update(c, prefix, (size_t)length_prefix(prefix, len, '#'));
    SHA1_Update(c, hex, HEX);
}

/* "<ms>-<seq>" into out (at least 44 bytes); its length. */
static int format_id(char *out, const StreamID *id) {
    char ms[24], seq[24];
    int a = length_prefix(ms, (size_t)id->ms, '-');
    int b = length_prefix(seq, (size_t)id->seq, ' ') - 1;
    memcpy(out, ms, (size_t)a);
    memcpy(out + a, seq, (size_t)b);
    return a + b;
}

/* The keys a command appends to (argv[1] the journal, argv[2] its digests hash) and the
 * head's hash. */
typedef struct {
    RedisModuleKey *journal, *digests;
    RedisModuleString *head_field;
    char prev[HEX];
} Chain;

/* Opens the chain's keys and reads the head's hash (GENESIS when malformed, as head_hash);
 * MOD_ERR when the digests hash has no head, or either key has another type: the caller
 * declines. */
static int open_chain(RedisModuleCtx *ctx, RedisModuleString **argv, Chain *chain) {
    chain->digests = OpenKey(ctx, argv[2], KEY_READ | KEY_WRITE);
    chain->journal = OpenKey(ctx, argv[1], KEY_READ | KEY_WRITE);
    chain->head_field = CreateString(ctx, HEAD_FIELD, sizeof(HEAD_FIELD) - 1);
    int journal_type = KeyType(chain->journal);
    if (KeyType(chain->digests) != KEYTYPE_HASH ||
        (journal_type != KEYTYPE_STREAM && journal_type != KEYTYPE_EMPTY))
        return MOD_ERR;
    RedisModuleString *head = NULL;
    HashGet(chain->digests, HASH_NONE, chain->head_field, &head, NULL);
    if (head == NULL) return MOD_ERR;
    size_t len;
    const char *raw = StringPtrLen(head, &len);
    if (len > HEX + 1 && raw[len - HEX - 1] == ' ')
        memcpy(chain->prev, raw + len - HEX, HEX);
    else
        memcpy(chain->prev, GENESIS, HEX);
    return MOD_OK;
}

typedef struct {
    const char *key, *digest;
    size_t key_len, digest_len;
} Pair;

/* The entry appended as chain_append does: h = sha1(p, each field framed, then 'd'); the
 * gone keys' digests deleted, the entry added, the others' digests and the head set; each
 * change replicated as the plain command. Replies the entry's id. */
static int append_entry(RedisModuleCtx *ctx, RedisModuleString **argv, const Chain *chain,
                        RedisModuleString **fields, int nfields, const Pair *pairs, int npairs,
                        const char *d, size_t d_len) {
    RedisModuleKey *journal = chain->journal, *digests = chain->digests;
    RedisModuleString *head_field = chain->head_field;
    const char *prev = chain->prev;
    SHA_CTX c;
    SHA1_Init(&c);
    SHA1_Update(&c, prev, HEX);
    for (int i = 0; i < nfields; i++) {
        size_t len;
        const char *v = StringPtrLen(fields[i], &len);
        sha_value(&c, v, len);
    }
    sha_framed(&c, "d", 1);
    sha_value(&c, d, d_len);
    char h[HEX];
    sha_hex_final(&c, h);

    RedisModuleString **args =
        Alloc(sizeof(RedisModuleString *) * (size_t)(2 * npairs + nfields + 10));
    int n = 0, gone = 0;
    args[n++] = argv[2];
    for (int i = 0; i < npairs; i++) {
        if (pairs[i].digest_len) continue;
        RedisModuleString *key = CreateString(ctx, pairs[i].key, pairs[i].key_len);
        HashSet(digests, HASH_NONE, key, HASH_DELETE, NULL);
        args[n++] = key;
        gone++;
    }
    if (gone) Replicate(ctx, "HDEL", "v", args, (size_t)n);

    n = 0;
    for (int i = 0; i < nfields; i++) args[n++] = fields[i];
    args[n++] = CreateString(ctx, "d", 1);
    args[n++] = CreateString(ctx, d, d_len);
    args[n++] = CreateString(ctx, "p", 1);
    args[n++] = CreateString(ctx, prev, HEX);
    args[n++] = CreateString(ctx, "h", 1);
    args[n++] = CreateString(ctx, h, HEX);
    StreamID id;
    if (StreamAdd(journal, STREAM_ADD_AUTOID, &id, args, n / 2) != MOD_OK) {
        Free(args);
        return refuse(ctx, "ERR aether.chain: the journal entry was not added");
    }
    char id_text[48];
    int id_len = format_id(id_text, &id);
    memmove(args + 2, args, sizeof(RedisModuleString *) * (size_t)n);
    args[0] = argv[1];
    args[1] = CreateString(ctx, id_text, (size_t)id_len);
    Replicate(ctx, "XADD", "v", args, (size_t)(n + 2)); /* with its id */

    char head_value[48 + 1 + HEX];
    memcpy(head_value, id_text, (size_t)id_len);
    head_value[id_len] = ' ';
    memcpy(head_value + id_len + 1, h, HEX);
    n = 0;
    args[n++] = argv[2];
    for (int i = 0; i < npairs; i++) {
        if (!pairs[i].digest_len) continue;
        RedisModuleString *key = CreateString(ctx, pairs[i].key, pairs[i].key_len);
        RedisModuleString *digest = CreateString(ctx, pairs[i].digest, pairs[i].digest_len);
        HashSet(digests, HASH_NONE, key, digest, NULL);
        args[n++] = key;
        args[n++] = digest;
    }
    RedisModuleString *head_now = CreateString(ctx, head_value, (size_t)id_len + 1 + HEX);
    HashSet(digests, HASH_NONE, head_field, head_now, NULL);
    args[n++] = head_field;
    args[n++] = head_now;
    Replicate(ctx, "HSET", "v", args, (size_t)n);
    Free(args);
    return ReplyWithStringBuffer(ctx, id_text, (size_t)id_len);
}

/* The arguments both commands start with: journal digests id nfields field...; the
 * fields' count, or -1 (and the reply sent) when they do not parse. */
static int common_args(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int tail) {
    size_t id_len;
    const char *id = StringPtrLen(argv[3], &id_len);
    long long nfields;
    if (id_len != 1 || id[0] != '*') {
        refuse(ctx, "AETHERCHAIN only entries with new ids ('*')");
        return -1;
    }
    if (parse_count(argv[4], &nfields) != MOD_OK || nfields % 2 || 5 + nfields + tail > argc) {
        refuse(ctx, "AETHERCHAIN the fields do not parse");
        return -1;
    }
    return (int)nfields;
}

static int chain_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 5) return WrongArity(ctx);
    AutoMemory(ctx);
    int nfields = common_args(ctx, argv, argc, 0);
    if (nfields < 0) return MOD_OK;
    int fields_at = 5, specs_at = 5 + nfields;

    /* the keys, checked whole before anything is read or written */
    int cap = (argc - specs_at) / 2 + 1, nkeys = 0;
    Touched *keys = Alloc(sizeof(Touched) * (size_t)cap);
    int at = specs_at, ok = 1;
    while (at < argc && ok) {
        if (at + 1 >= argc) {
            ok = 0;
            break;
        }
        Touched *t = &keys[nkeys++];
        size_t mlen;
        const char *mode = StringPtrLen(argv[at + 1], &mlen);
        t->key = argv[at];
        t->mode = mlen == 1 ? mode[0] : '?';
        t->digest_len = HEX;
        at += 2;
        if (t->mode == 'G') {
            t->digest_len = 0;
        } else if (t->mode == 'N' || t->mode == 'E') {
            long long count;
            if (at >= argc || parse_count(argv[at], &count) != MOD_OK || count < 1 ||
                at + 1 + count > argc) {
                ok = 0;
                break;
            }
            t->first = at + 1;
            t->count = (int)count;
            at += 1 + (int)count;
        } else if (t->mode == 'T' || t->mode == 'P') {
            if (at >= argc) {
                ok = 0;
                break;
            }
            t->first = at;
            t->count = 1;
            at += 1;
            if (t->mode == 'P') {
                size_t len;
                StringPtrLen(argv[t->first], &len);
                if (len != HEX && len != 0) ok = 0;
                if (len == 0) t->digest_len = 0;
            }
        } else {
            ok = 0;
        }
    }
    if (!ok || nkeys == 0) {
        Free(keys);
        return refuse(ctx, "AETHERCHAIN the keys do not parse");
    }

    Chain chain;
    if (open_chain(ctx, argv, &chain) != MOD_OK) {
        Free(keys);
        return refuse(ctx, "AETHERCHAIN no head in the digests hash");
    }

    /* each key's digest, and 'd': the keys with their digests, packed */
    Buf d = {0};
    mp_array(&d, (size_t)nkeys * 2);
    for (int i = 0; i < nkeys; i++) {
        Touched *t = &keys[i];
        if (t->mode == 'N') {
            list_fold(LIST_BASE, sizeof(LIST_BASE) - 1, argv + t->first, (size_t)t->count,
                      t->digest);
        } else if (t->mode == 'E') {
            RedisModuleString *was = NULL;
            HashGet(chain.digests, HASH_NONE, t->key, &was, NULL);
            size_t len = 0;
            const char *kept = was ? StringPtrLen(was, &len) : NULL;
            if (kept != NULL && len == HEX) {
                char from[HEX];
                memcpy(from, kept, HEX);
                list_fold(from, HEX, argv + t->first, (size_t)t->count, t->digest);
            } else if (list_content(ctx, t->key, t->digest) != MOD_OK) {
                t->digest_len = 0;
            }
        } else if (t->mode == 'T') {
            size_t len;
            const char *text = StringPtrLen(argv[t->first], &len);
            SHA_CTX c;
            SHA1_Init(&c);
            SHA1_Update(&c, JSON_TYPE, sizeof(JSON_TYPE) - 1);
            sha_framed(&c, text, len);
            sha_hex_final(&c, t->digest);
        } else if (t->mode == 'P' && t->digest_len) {
            memcpy(t->digest, StringPtrLen(argv[t->first], NULL), HEX);
        }
        size_t klen;
        const char *k = StringPtrLen(t->key, &klen);
        mp_str(&d, k, klen);
        mp_str(&d, t->digest, t->digest_len);
    }

    Pair *pairs = Alloc(sizeof(Pair) * (size_t)nkeys);
    for (int i = 0; i < nkeys; i++) {
        pairs[i].key = StringPtrLen(keys[i].key, &pairs[i].key_len);
        pairs[i].digest = keys[i].digest;
        pairs[i].digest_len = keys[i].digest_len;
    }
    int replied =
        append_entry(ctx, argv, &chain, argv + fields_at, nfields, pairs, nkeys, d.p, d.len);
    Free(pairs);
    Free(d.p);
    Free(keys);
    return replied;
}


/* msgpack's string header at p (of at most `left` bytes): the string's length and where it
 * starts, or MOD_ERR. Redis's cmsgpack packs Lua strings as fixstr, str8, str16, str32. */
static int mp_read_str(const unsigned char *p, size_t left, size_t *len, size_t *head) {
    if (left < 1) return MOD_ERR;
    unsigned char b = p[0];
    if ((b & 0xe0) == 0xa0) {
        *len = b & 0x1f;
        *head = 1;
    } else if (b == 0xd9 && left >= 2) {
        *len = p[1];
        *head = 2;
    } else if (b == 0xda && left >= 3) {
        *len = ((size_t)p[1] << 8) | p[2];
        *head = 3;
    } else if (b == 0xdb && left >= 5) {
        *len = ((size_t)p[1] << 24) | ((size_t)p[2] << 16) | ((size_t)p[3] << 8) | p[4];
        *head = 5;
    } else {
        return MOD_ERR;
    }
    return *head + *len <= left ? MOD_OK : MOD_ERR;
}

/* AETHER.CHAIND journal digests id nfields field... d: the entry with 'd' given packed
 * (the keys and the digests the caller computed: a rollback's step and settling, a write
 * too large for AETHER.CHAIN's arguments). */
static int chaind_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 6) return WrongArity(ctx);
    AutoMemory(ctx);
    int nfields = common_args(ctx, argv, argc, 1);
    if (nfields < 0) return MOD_OK;
    if (5 + nfields + 1 != argc) return refuse(ctx, "AETHERCHAIN the fields do not parse");
    size_t d_len;
    const unsigned char *d = (const unsigned char *)StringPtrLen(argv[argc - 1], &d_len);
    size_t at, count;
    if (d_len >= 1 && (d[0] & 0xf0) == 0x90) {
        count = d[0] & 0x0f;
        at = 1;
    } else if (d_len >= 3 && d[0] == 0xdc) {
        count = ((size_t)d[1] << 8) | d[2];
        at = 3;
    } else if (d_len >= 5 && d[0] == 0xdd) {
        count = ((size_t)d[1] << 24) | ((size_t)d[2] << 16) | ((size_t)d[3] << 8) | d[4];
        at = 5;
    } else {
        return refuse(ctx, "AETHERCHAIN d is not an array of strings");
    }
    if (count % 2 || count / 2 > d_len) return refuse(ctx, "AETHERCHAIN d is not paired");
    Pair *pairs = Alloc(sizeof(Pair) * (count / 2 + 1));
    int npairs = 0;
    for (size_t i = 0; i < count; i += 2) {
        size_t len, head;
        Pair *pair = &pairs[npairs++];
        int ok = mp_read_str(d + at, d_len - at, &len, &head) == MOD_OK;
        if (ok) {
            pair->key = (const char *)d + at + head;
            pair->key_len = len;
            at += head + len;
            ok = mp_read_str(d + at, d_len - at, &len, &head) == MOD_OK;
        }
        if (!ok) {
            Free(pairs);
            return refuse(ctx, "AETHERCHAIN d is not an array of strings");
        }
        pair->digest = (const char *)d + at + head;
        pair->digest_len = len;
        at += head + len;
    }
    if (at != d_len) {
        Free(pairs);
        return refuse(ctx, "AETHERCHAIN d has bytes after its array");
    }
    Chain chain;
    if (open_chain(ctx, argv, &chain) != MOD_OK) {
        Free(pairs);
        return refuse(ctx, "AETHERCHAIN no head in the digests hash");
    }
    int replied =
        append_entry(ctx, argv, &chain, argv + 5, nfields, pairs, npairs, (const char *)d, d_len);
    Free(pairs);
    return replied;
}

/* AETHER.LISTDIGEST key from start count: journal.lua's list_digest of the list's items
 * [start, start + count) (count -1: to its end) folded onto `from` (its list base, or a
 * fold so far); replies [digest, items folded]. A key that is not a list is refused. */
static int listdigest_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 5) return WrongArity(ctx);
    AutoMemory(ctx);
    long long start, count = -1;
    size_t count_len, from_len;
    const char *count_arg = StringPtrLen(argv[4], &count_len);
    const char *from = StringPtrLen(argv[2], &from_len);
    if (parse_count(argv[3], &start) != MOD_OK ||
        (!(count_len == 2 && count_arg[0] == '-' && count_arg[1] == '1') &&
         parse_count(argv[4], &count) != MOD_OK) ||
        from_len > HEX)
        return refuse(ctx, "AETHERCHAIN the arguments do not parse");
    RedisModuleKey *key = OpenKey(ctx, argv[1], KEY_READ);
    if (KeyType(key) != KEYTYPE_LIST) return refuse(ctx, "AETHERCHAIN not a list");
    long long len = (long long)ValueLength(key);
    long long end = count < 0 || start + count > len ? len : start + count;
    char d[HEX];
    long long folded = fold_list(ctx, key, from, from_len, start, end, d);
    ReplyWithArray(ctx, 2);
    ReplyWithStringBuffer(ctx, d, folded ? HEX : from_len);
    return ReplyWithLongLong(ctx, folded);
}

#define API(name) GetApi("RedisModule_" #name, (void **)&name)

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    GetApi = (int (*)(const char *, void *))(uintptr_t)((void **)ctx)[0];
    API(IsModuleNameBusy);
    API(SetModuleAttribs);
    API(CreateCommand);
    API(AutoMemory);
    API(StringPtrLen);
    API(CreateString);
    API(Call);
    API(CallReplyType);
    API(CallReplyLength);
    API(CallReplyArrayElement);
    API(CallReplyStringPtr);
    API(ReplyWithCallReply);
    API(ReplyWithError);
    API(WrongArity);
    API(ReplyWithStringBuffer);
    API(OpenKey);
    API(CloseKey);
    API(KeyType);
    API(HashGet);
    API(HashSet);
    API(StreamAdd);
    API(Replicate);
    API(ValueLength);
    API(ListGet);
    API(FreeString);
    API(ReplyWithArray);
    API(ReplyWithLongLong);
    API(Alloc);
    API(Realloc);
    API(Free);
    if (IsModuleNameBusy && IsModuleNameBusy("aether_chain")) return MOD_ERR;
    SetModuleAttribs(ctx, "aether_chain", 1, APIVER_1);
    if (CreateCommand(ctx, "aether.chain", chain_command, "write deny-oom", 1, 2, 1) != MOD_OK ||
        CreateCommand(ctx, "aether.chaind", chaind_command, "write deny-oom", 1, 2, 1) != MOD_OK ||
        CreateCommand(ctx, "aether.listdigest", listdigest_command, "readonly", 1, 1, 1) != MOD_OK)
        return MOD_ERR;
    return MOD_OK;
}
