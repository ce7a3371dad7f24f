// OpenSSL's libssl for the HTTPS server. Several of the calls it needs are macros Swift
// cannot import (option bits built with SSL_OP_BIT, SSL_CTX_ctrl wrappers, BIO_ctrl
// wrappers), so they are exposed here as small functions with the same meaning.
#ifndef C_OPENSSL_SHIM_H
#define C_OPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/x509.h>

/// Limits a context to TLS 1.2 and 1.3 and sets the server's options: no renegotiation (a
/// client could otherwise make a write wait for a read), no compression, the server's cipher
/// order, a peer that closes without close_notify reads as end of file (most HTTP clients do),
/// and kernel TLS where the kernel offers it. Returns 1 on success, 0 on failure.
static inline int cshutter_ssl_ctx_configure_server(SSL_CTX *ctx) {
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) return 0;
    if (SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) return 0;
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION
                                 | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF
                                 | SSL_OP_ENABLE_KTLS);
    // Partial writes map onto the server's write queue like a short send(2); a retried write
    // may come from another buffer holding the same bytes (the shared scratch buffer).
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // read_ahead stays off: OpenSSL then reads one record at a time, so bytes not yet returned
    // by SSL_read stay in the socket, where level-triggered epoll still sees them (with read
    // ahead they could sit in OpenSSL while the connection waits for a readiness that never comes).
    return 1;
}

/// Whether the connection's records are sent by the kernel (kTLS), so `SSL_sendfile` works.
static inline int cshutter_ssl_ktls_send(SSL *ssl) {
    return BIO_get_ktls_send(SSL_get_wbio(ssl)) ? 1 : 0;
}

/// Whether the connection's records are received by the kernel (kTLS).
static inline int cshutter_ssl_ktls_receive(SSL *ssl) {
    return BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? 1 : 0;
}

/// Whether an error code says a private key does not belong to its certificate.
static inline int cshutter_err_is_key_mismatch(unsigned long code) {
    return ERR_GET_LIB(code) == ERR_LIB_X509 && ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH;
}

#endif
