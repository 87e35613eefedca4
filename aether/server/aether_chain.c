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

/* d(items + x) = sha1(d(items) .. framed(x)), into `d` (HEX bytes; `from` may be shorter;
 * at least one item). */
static void list_fold(const char *from, size_t from_len, RedisModuleString **items, size_t n,
                      char d[HEX]) {
    char tmp[HEX];
    const char *prev = from;
    size_t prev_len = from_len;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *item = StringPtrLen(items[i], &len);
        SHA_CTX c;
        SHA1_Init(&c);
        SHA1_Update(&c, prev, prev_len);
        sha_framed(&c, item, len);
        sha_hex_final(&c, tmp);
        memcpy(d, tmp, HEX);
        prev = d;
        prev_len = HEX;
    }
}

/* The digest of a whole list read back (LRANGE key 0 -1), as journal.lua's content_digest. */
static int list_content(RedisModuleCtx *ctx, RedisModuleString *key, char d[HEX]) {
    RedisModuleCallReply *r = Call(ctx, "LRANGE", "scc", key, "0", "-1");
    if (r == NULL || CallReplyType(r) != REPLY_ARRAY) return MOD_ERR;
    size_t n = CallReplyLength(r);
    char prev[HEX];
    const char *from = LIST_BASE;
    size_t from_len = sizeof(LIST_BASE) - 1;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *item = CallReplyStringPtr(CallReplyArrayElement(r, i), &len);
        SHA_CTX c;
        SHA1_Init(&c);
        SHA1_Update(&c, from, from_len);
        sha_framed(&c, item, len);
        sha_hex_final(&c, prev);
        from = prev;
        from_len = HEX;
    }
    if (n == 0) return MOD_ERR; /* an empty list does not exist: not a list's digest */
    memcpy(d, prev, HEX);
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

static int chain_command(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc < 5) return WrongArity(ctx);
    AutoMemory(ctx);
    size_t id_arg_len;
    const char *id_arg = StringPtrLen(argv[3], &id_arg_len);
    long long nfields;
    if (id_arg_len != 1 || id_arg[0] != '*')
        return refuse(ctx, "AETHERCHAIN only entries with new ids ('*')");
    if (parse_count(argv[4], &nfields) != MOD_OK || nfields % 2 || 5 + nfields > argc)
        return refuse(ctx, "AETHERCHAIN the fields do not parse");
    int fields_at = 5, specs_at = 5 + (int)nfields;

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

    RedisModuleKey *digests = OpenKey(ctx, argv[2], KEY_READ | KEY_WRITE);
    RedisModuleKey *journal = OpenKey(ctx, argv[1], KEY_READ | KEY_WRITE);
    int journal_type = KeyType(journal);
    if (KeyType(digests) != KEYTYPE_HASH ||
        (journal_type != KEYTYPE_STREAM && journal_type != KEYTYPE_EMPTY)) {
        Free(keys);
        return refuse(ctx, "AETHERCHAIN no head in the digests hash");
    }
    RedisModuleString *head_field = CreateString(ctx, HEAD_FIELD, sizeof(HEAD_FIELD) - 1);
    RedisModuleString *head = NULL;
    HashGet(digests, HASH_NONE, head_field, &head, NULL);
    if (head == NULL) {
        Free(keys);
        return refuse(ctx, "AETHERCHAIN no head in the digests hash");
    }
    size_t head_len;
    const char *head_ptr = StringPtrLen(head, &head_len);
    char prev[HEX];
    if (head_len > HEX + 1 && head_ptr[head_len - HEX - 1] == ' ')
        memcpy(prev, head_ptr + head_len - HEX, HEX);
    else
        memcpy(prev, GENESIS, HEX);

    /* each key's digest, and 'd': the keys with their digests, packed */
    Buf d = {0};
    mp_array(&d, (size_t)nkeys * 2);
    int gone = 0;
    for (int i = 0; i < nkeys; i++) {
        Touched *t = &keys[i];
        if (t->mode == 'N') {
            list_fold(LIST_BASE, sizeof(LIST_BASE) - 1, argv + t->first, (size_t)t->count,
                      t->digest);
        } else if (t->mode == 'E') {
            RedisModuleString *was = NULL;
            HashGet(digests, HASH_NONE, t->key, &was, NULL);
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
        gone += t->digest_len == 0;
    }

    /* h = sha1(p, each field framed, then 'd') */
    SHA_CTX c;
    SHA1_Init(&c);
    SHA1_Update(&c, prev, HEX);
    for (int i = fields_at; i < specs_at; i++) {
        size_t len;
        const char *v = StringPtrLen(argv[i], &len);
        sha_value(&c, v, len);
    }
    sha_framed(&c, "d", 1);
    sha_value(&c, d.p, d.len);
    char h[HEX];
    sha_hex_final(&c, h);

    /* the digests of keys gone leave the hash first, as in chain_append */
    RedisModuleString **args = Alloc(sizeof(RedisModuleString *) * (size_t)(2 * nkeys + nfields + 10));
    if (gone) {
        int n = 0;
        args[n++] = argv[2];
        for (int i = 0; i < nkeys; i++) {
            if (keys[i].digest_len) continue;
            HashSet(digests, HASH_NONE, keys[i].key, HASH_DELETE, NULL);
            args[n++] = keys[i].key;
        }
        Replicate(ctx, "HDEL", "v", args, (size_t)n);
    }

    /* the entry: field... d <d> p <prev> h <h> */
    int n = 0;
    for (int i = fields_at; i < specs_at; i++) args[n++] = argv[i];
    args[n++] = CreateString(ctx, "d", 1);
    args[n++] = CreateString(ctx, d.p, d.len);
    args[n++] = CreateString(ctx, "p", 1);
    args[n++] = CreateString(ctx, prev, HEX);
    args[n++] = CreateString(ctx, "h", 1);
    args[n++] = CreateString(ctx, h, HEX);
    Free(d.p);
    StreamID id;
    if (StreamAdd(journal, STREAM_ADD_AUTOID, &id, args, n / 2) != MOD_OK) {
        Free(args);
        Free(keys);
        return refuse(ctx, "ERR aether.chain: the journal entry was not added");
    }
    char id_text[48];
    int id_len = format_id(id_text, &id);
    /* replicated with its id: XADD journal <id> field... */
    memmove(args + 2, args, sizeof(RedisModuleString *) * (size_t)n);
    args[0] = argv[1];
    args[1] = CreateString(ctx, id_text, (size_t)id_len);
    Replicate(ctx, "XADD", "v", args, (size_t)(n + 2));

    /* the keys' digests and the head: HSET digests key digest... (head) "<id> <h>" */
    char head_value[48 + 1 + HEX];
    memcpy(head_value, id_text, (size_t)id_len);
    head_value[id_len] = ' ';
    memcpy(head_value + id_len + 1, h, HEX);
    n = 0;
    args[n++] = argv[2];
    for (int i = 0; i < nkeys; i++) {
        if (!keys[i].digest_len) continue;
        RedisModuleString *digest = CreateString(ctx, keys[i].digest, HEX);
        HashSet(digests, HASH_NONE, keys[i].key, digest, NULL);
        args[n++] = keys[i].key;
        args[n++] = digest;
    }
    RedisModuleString *head_now = CreateString(ctx, head_value, (size_t)id_len + 1 + HEX);
    HashSet(digests, HASH_NONE, head_field, head_now, NULL);
    args[n++] = head_field;
    args[n++] = head_now;
    Replicate(ctx, "HSET", "v", args, (size_t)n);
    Free(args);
    Free(keys);
    return ReplyWithStringBuffer(ctx, id_text, (size_t)id_len);
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
    API(Alloc);
    API(Realloc);
    API(Free);
    if (IsModuleNameBusy && IsModuleNameBusy("aether_chain")) return MOD_ERR;
    SetModuleAttribs(ctx, "aether_chain", 1, APIVER_1);
    if (CreateCommand(ctx, "aether.chain", chain_command, "write deny-oom", 1, 2, 1) != MOD_OK)
        return MOD_ERR;
    return MOD_OK;
}
