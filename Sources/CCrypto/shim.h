#include <openssl/sha.h>
#include <openssl/rand.h>
