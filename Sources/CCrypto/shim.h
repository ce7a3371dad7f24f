// SHA256_Init/Update/Final are deprecated in OpenSSL 3 in favour of EVP, but they are still
// part of its API and run the same assembly; unlike EVP (and the one-shot SHA256(), which goes
// through it) they do not load the default provider, whose tables cost 2 MiB of resident
// memory the first time any EVP digest or RAND_bytes is used (benchmarks/README.md, RSS).
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
