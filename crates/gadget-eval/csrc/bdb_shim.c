/*
 * A small C shim over BerkeleyDB 5.3 (Debian's libdb5.3-dev) for Gadget's `berkeleydb`
 * store: BerkeleyDB's API is structs of function pointers, which Rust cannot call directly.
 * One environment (the cache), shared by one or more handles; each handle has one database
 * per state (B-tree or hash) and one open cursor per state. No transactions and no locking:
 * a handle is used by one thread at a time and no two handles open the same database file;
 * the environment is free-threaded (DB_THREAD), so handles on several threads share its cache.
 */
#include <db.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

typedef struct {
    DB **dbs;
    DBC **cursors;
    int states;
    int hash;
    /* the value read last, owned here (DB_DBT_REALLOC) */
    void *buf;
    u_int32_t buf_len;
    /* hash only: the key the emulated iterator of each state stands on */
    void **at;
    u_int32_t *at_len;
} gbdb;

static void say(char *err, int errlen, const char *what, int ret) {
    if (err && errlen > 0) {
        snprintf(err, (size_t)errlen, "%s: %s", what, db_strerror(ret));
    }
}

void gbdb_close(gbdb *h);

DB_ENV *gbdb_env_open(const char *home, unsigned long long cache_bytes, char *err, int errlen) {
    DB_ENV *env = NULL;
    int ret = db_env_create(&env, 0);
    if (ret != 0) {
        say(err, errlen, "db_env_create", ret);
        return NULL;
    }
    ret = env->set_cachesize(env, (u_int32_t)(cache_bytes >> 30),
                             (u_int32_t)(cache_bytes & ((1ULL << 30) - 1)), 1);
    if (ret == 0) {
        ret = env->open(env, home, DB_CREATE | DB_INIT_MPOOL | DB_PRIVATE | DB_THREAD, 0);
    }
    if (ret != 0) {
        say(err, errlen, "opening the environment", ret);
        env->close(env, 0);
        return NULL;
    }
    return env;
}

void gbdb_env_close(DB_ENV *env) {
    if (env) {
        env->close(env, 0);
    }
}

gbdb *gbdb_attach(DB_ENV *env, int first_file, int states, int hash, char *err, int errlen) {
    gbdb *h = calloc(1, sizeof(gbdb));
    if (!h) {
        say(err, errlen, "out of memory", ENOMEM);
        return NULL;
    }
    h->states = states;
    h->hash = hash;
    h->dbs = calloc((size_t)states, sizeof(DB *));
    h->cursors = calloc((size_t)states, sizeof(DBC *));
    h->at = calloc((size_t)states, sizeof(void *));
    h->at_len = calloc((size_t)states, sizeof(u_int32_t));
    if (!h->dbs || !h->cursors || !h->at || !h->at_len) {
        say(err, errlen, "out of memory", ENOMEM);
        gbdb_close(h);
        return NULL;
    }
    for (int i = 0; i < states; i++) {
        char file[32];
        snprintf(file, sizeof file, "state-%d.db", first_file + i);
        int ret = db_create(&h->dbs[i], env, 0);
        if (ret == 0) {
            ret = h->dbs[i]->open(h->dbs[i], NULL, file, NULL, hash ? DB_HASH : DB_BTREE,
                                  DB_CREATE, 0644);
        }
        if (ret != 0) {
            say(err, errlen, "opening a state database", ret);
            gbdb_close(h);
            return NULL;
        }
    }
    return h;
}

void gbdb_close(gbdb *h) {
    if (!h) {
        return;
    }
    for (int i = 0; i < h->states; i++) {
        if (h->cursors && h->cursors[i]) {
            h->cursors[i]->close(h->cursors[i]);
        }
        if (h->dbs && h->dbs[i]) {
            h->dbs[i]->close(h->dbs[i], 0);
        }
        if (h->at) {
            free(h->at[i]);
        }
    }
    free(h->dbs);
    free(h->cursors);
    free(h->at);
    free(h->at_len);
    free(h->buf);
    free(h);
}

static void dbt(DBT *d, const void *data, unsigned len) {
    memset(d, 0, sizeof *d);
    d->data = (void *)data;
    d->size = len;
}

/* prepares `data` to read into h->buf, growing it as needed */
static void read_into(gbdb *h, DBT *data) {
    memset(data, 0, sizeof *data);
    data->flags = DB_DBT_REALLOC;
    data->data = h->buf;
}

/* reads a value into h->buf: 1 found (v, vlen set), 0 not found, else a BerkeleyDB error */
int gbdb_get(gbdb *h, int state, const void *k, unsigned klen, const void **v, unsigned *vlen) {
    DBT key, data;
    dbt(&key, k, klen);
    read_into(h, &data);
    int ret = h->dbs[state]->get(h->dbs[state], NULL, &key, &data, 0);
    if (data.data) {
        h->buf = data.data;
    }
    if (ret == DB_NOTFOUND) {
        return 0;
    }
    if (ret != 0) {
        return ret;
    }
    *v = h->buf;
    *vlen = data.size;
    return 1;
}

int gbdb_put(gbdb *h, int state, const void *k, unsigned klen, const void *v, unsigned vlen) {
    DBT key, data;
    dbt(&key, k, klen);
    dbt(&data, v, vlen);
    return h->dbs[state]->put(h->dbs[state], NULL, &key, &data, 0);
}

int gbdb_del(gbdb *h, int state, const void *k, unsigned klen) {
    DBT key;
    dbt(&key, k, klen);
    int ret = h->dbs[state]->del(h->dbs[state], NULL, &key, 0);
    return ret == DB_NOTFOUND ? 0 : ret;
}

static int compare(const void *a, unsigned alen, const void *b, unsigned blen) {
    unsigned n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/*
 * Hash databases have no key order: find the smallest key >= (or >, when strict) the
 * bound by a full scan. Returns 1 with the key in h->at[state], 0 when none, < 0 error.
 */
static int hash_scan(gbdb *h, int state, const void *bound, unsigned blen, int strict,
                     unsigned *vlen) {
    DBC *c;
    int ret = h->dbs[state]->cursor(h->dbs[state], NULL, &c, 0);
    if (ret != 0) {
        return ret;
    }
    DBT key, data;
    memset(&key, 0, sizeof key);
    memset(&data, 0, sizeof data);
    void *best = NULL;
    unsigned best_len = 0, best_vlen = 0;
    while ((ret = c->get(c, &key, &data, DB_NEXT)) == 0) {
        int cmp = compare(key.data, key.size, bound, blen);
        if (cmp < 0 || (strict && cmp == 0)) {
            continue;
        }
        if (!best || compare(key.data, key.size, best, best_len) < 0) {
            void *copy = realloc(best, key.size ? key.size : 1);
            if (!copy) {
                free(best);
                c->close(c);
                return ENOMEM;
            }
            best = copy;
            memcpy(best, key.data, key.size);
            best_len = key.size;
            best_vlen = data.size;
        }
    }
    c->close(c);
    if (ret != DB_NOTFOUND) {
        free(best);
        return ret;
    }
    free(h->at[state]);
    h->at[state] = best;
    h->at_len[state] = best_len;
    if (!best) {
        return 0;
    }
    *vlen = best_vlen;
    return 1;
}

/* positions the state's iterator at the first key >= k: 1 found (vlen set), 0 none, else error */
int gbdb_seek(gbdb *h, int state, const void *k, unsigned klen, unsigned *vlen) {
    if (h->hash) {
        return hash_scan(h, state, k, klen, 0, vlen);
    }
    if (h->cursors[state]) {
        h->cursors[state]->close(h->cursors[state]);
        h->cursors[state] = NULL;
    }
    int ret = h->dbs[state]->cursor(h->dbs[state], NULL, &h->cursors[state], 0);
    if (ret != 0) {
        return ret;
    }
    DBT key, data;
    memset(&key, 0, sizeof key);
    key.flags = DB_DBT_REALLOC;
    void *copy = malloc(klen ? klen : 1);
    if (!copy) {
        return ENOMEM;
    }
    memcpy(copy, k, klen);
    key.data = copy;
    key.size = klen;
    memset(&data, 0, sizeof data);
    ret = h->cursors[state]->get(h->cursors[state], &key, &data, DB_SET_RANGE);
    free(key.data);
    if (ret == DB_NOTFOUND) {
        h->cursors[state]->close(h->cursors[state]);
        h->cursors[state] = NULL;
        return 0;
    }
    if (ret != 0) {
        return ret;
    }
    *vlen = data.size;
    return 1;
}

/* advances the state's iterator: 1 found (vlen set), 0 past the end or no iterator, else error */
int gbdb_next(gbdb *h, int state, unsigned *vlen) {
    if (h->hash) {
        if (!h->at[state]) {
            return 0;
        }
        void *at = h->at[state];
        unsigned at_len = h->at_len[state];
        h->at[state] = NULL;
        int ret = hash_scan(h, state, at, at_len, 1, vlen);
        free(at);
        return ret;
    }
    if (!h->cursors[state]) {
        return 0;
    }
    DBT key, data;
    memset(&key, 0, sizeof key);
    memset(&data, 0, sizeof data);
    int ret = h->cursors[state]->get(h->cursors[state], &key, &data, DB_NEXT);
    if (ret == DB_NOTFOUND) {
        h->cursors[state]->close(h->cursors[state]);
        h->cursors[state] = NULL;
        return 0;
    }
    if (ret != 0) {
        return ret;
    }
    *vlen = data.size;
    return 1;
}

/*
 * Walks the keys k with start <= k < end of a state with a cursor of its own, deleting each
 * when `del` is set; *count is how many it passed. A B-tree starts at DB_SET_RANGE and stops
 * at the first key >= end; a hash database has no key order, so every key is looked at.
 * Returns 0 or a BerkeleyDB error.
 */
int gbdb_range(gbdb *h, int state, const void *start, unsigned slen, const void *end,
               unsigned elen, int del, unsigned long long *count) {
    *count = 0;
    DBC *c;
    int ret = h->dbs[state]->cursor(h->dbs[state], NULL, &c, 0);
    if (ret != 0) {
        return ret;
    }
    DBT key, data;
    memset(&key, 0, sizeof key);
    memset(&data, 0, sizeof data);
    void *copy = NULL;
    if (h->hash) {
        ret = c->get(c, &key, &data, DB_FIRST);
    } else {
        /* DB_SET_RANGE writes the key found into `key`: give it memory of its own */
        copy = malloc(slen ? slen : 1);
        if (!copy) {
            c->close(c);
            return ENOMEM;
        }
        memcpy(copy, start, slen);
        key.flags = DB_DBT_REALLOC;
        key.data = copy;
        key.size = slen;
        ret = c->get(c, &key, &data, DB_SET_RANGE);
        copy = key.data;
    }
    while (ret == 0) {
        int in_range = compare(key.data, key.size, start, slen) >= 0 &&
                       compare(key.data, key.size, end, elen) < 0;
        if (!in_range && !h->hash) {
            break;
        }
        if (in_range) {
            *count += 1;
            if (del && (ret = c->del(c, 0)) != 0) {
                break;
            }
        }
        ret = c->get(c, &key, &data, DB_NEXT);
        if (!h->hash) {
            copy = key.data;
        }
    }
    free(copy);
    int closed = c->close(c);
    if (ret == DB_NOTFOUND || ret == 0) {
        ret = closed;
    }
    return ret;
}

/*
 * Empties a state's database with DB->truncate (its pages freed, not its keys deleted one by
 * one), after closing the state's iterator, which truncate requires and a dropped state loses
 * anyway; *count is how many records it held. Returns 0 or a BerkeleyDB error.
 */
int gbdb_truncate(gbdb *h, int state, unsigned long long *count) {
    *count = 0;
    if (h->cursors[state]) {
        int closed = h->cursors[state]->close(h->cursors[state]);
        h->cursors[state] = NULL;
        if (closed != 0) {
            return closed;
        }
    }
    free(h->at[state]);
    h->at[state] = NULL;
    h->at_len[state] = 0;
    u_int32_t records = 0;
    int ret = h->dbs[state]->truncate(h->dbs[state], NULL, &records, 0);
    *count = records;
    return ret;
}

const char *gbdb_strerror(int ret) {
    return db_strerror(ret);
}
