#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H

// Typed, non-variadic wrappers for what Swift cannot use from libcrypto as it is: macros,
// variadic calls and OSSL_PARAM arrays (building a public key from its numbers, generating
// a key, reading its numbers back), the pointer-to-pointer d2i/i2d calls, STACK_OF macros
// and structures whose fields must be set.
//
// Only OpenSSL 3.0's current API: everything deprecated up to 3.0 (RSA_*, EC_KEY_*,
// SHA256_Init, HMAC_CTX, ...) is hidden, so using it does not compile.
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdint.h>
#include <string.h>

// Before any other call. No atexit handler: libcrypto's own clean-up at exit can run while
// other threads still use it (what Foundation's libcurl layer avoids the same way).
static inline int CCrypto_init(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

// MARK: Keys from their numbers

// The RSA public key (n, e), both big-endian; NULL when libcrypto refuses it.
static inline EVP_PKEY *CCrypto_rsa_public_key(const unsigned char *modulus, size_t modulus_length,
                                               const unsigned char *exponent, size_t exponent_length) {
    EVP_PKEY *key = NULL;
    BIGNUM *n = BN_bin2bn(modulus, (int)modulus_length, NULL);
    BIGNUM *e = BN_bin2bn(exponent, (int)exponent_length, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (n != NULL && e != NULL && builder != NULL && context != NULL
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n) == 1
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e) == 1
        && (params = OSSL_PARAM_BLD_to_param(builder)) != NULL
        && EVP_PKEY_fromdata_init(context) == 1) {
        if (EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    BN_free(e);
    BN_free(n);
    return key;
}

// The P-256 public key whose point is `point` (SEC 1 encoding: 0x04 || x || y); NULL when
// libcrypto refuses it.
static inline EVP_PKEY *CCrypto_p256_public_key(const unsigned char *point, size_t point_length) {
    EVP_PKEY *key = NULL;
    char group[] = SN_X9_62_prime256v1;
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, point_length);
    params[2] = OSSL_PARAM_construct_end();
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (context != NULL && EVP_PKEY_fromdata_init(context) == 1) {
        if (EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    return key;
}

// 1 when the key's public part is sound (for EC: the point is on its curve and not the
// point at infinity).
static inline int CCrypto_public_check(EVP_PKEY *key) {
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    if (context == NULL) return 0;
    int result = EVP_PKEY_public_check(context);
    EVP_PKEY_CTX_free(context);
    return result;
}

// MARK: Keys from their encodings

// A DER SubjectPublicKeyInfo; NULL unless it is one and fills `length` exactly.
static inline EVP_PKEY *CCrypto_public_key_from_der(const unsigned char *der, long length) {
    const unsigned char *cursor = der;
    EVP_PKEY *key = d2i_PUBKEY(NULL, &cursor, length);
    if (key != NULL && cursor != der + length) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

// The first "PUBLIC KEY" PEM block of `text` (other text and other blocks before it are
// skipped), which must hold exactly a DER SubjectPublicKeyInfo. PEM_read_bio_PUBKEY is
// laxer: it takes other labels and encodings too.
static inline EVP_PKEY *CCrypto_public_key_from_pem(const char *text, int length) {
    BIO *bio = BIO_new_mem_buf(text, length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = NULL;
    char *name = NULL, *header = NULL;
    unsigned char *data = NULL;
    long data_length = 0;
    while (PEM_read_bio(bio, &name, &header, &data, &data_length) == 1) {
        int found = strcmp(name, PEM_STRING_PUBLIC) == 0;
        if (found) key = CCrypto_public_key_from_der(data, data_length);
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_free(data);
        if (found) break;
    }
    BIO_free(bio);
    return key;
}

// The key's public part as DER SubjectPublicKeyInfo into `out` (NULL: only its length);
// the length, or a negative number on error.
static inline int CCrypto_public_key_der(EVP_PKEY *key, unsigned char *out) {
    unsigned char *cursor = out;
    return i2d_PUBKEY(key, out == NULL ? NULL : &cursor);
}

// MARK: Reading keys

// 1 when `key` is an EC key on the named curve P-256.
static inline int CCrypto_is_p256(const EVP_PKEY *key) {
    char name[64];
    size_t length = 0;
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return 0;
    if (EVP_PKEY_get_group_name(key, name, sizeof name, &length) != 1) return 0;
    return strcmp(name, SN_X9_62_prime256v1) == 0;
}

static inline int CCrypto_is_rsa(const EVP_PKEY *key) {
    return EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA;
}

// The big-endian bytes of the key's number `name` into `out`: their count, or -1 when the
// key has no such number or it does not fit in `capacity`.
static inline int CCrypto_key_number(const EVP_PKEY *key, const char *name, unsigned char *out, int capacity) {
    BIGNUM *number = NULL;
    if (EVP_PKEY_get_bn_param(key, name, &number) != 1) return -1;
    int length = BN_num_bytes(number);
    int written = length <= capacity ? BN_bn2bin(number, out) : -1;
    BN_free(number);
    return written;
}

static inline int CCrypto_rsa_modulus(const EVP_PKEY *key, unsigned char *out, int capacity) {
    return CCrypto_key_number(key, OSSL_PKEY_PARAM_RSA_N, out, capacity);
}

static inline int CCrypto_rsa_exponent(const EVP_PKEY *key, unsigned char *out, int capacity) {
    return CCrypto_key_number(key, OSSL_PKEY_PARAM_RSA_E, out, capacity);
}

// The affine coordinates of an EC key's point, each left-padded to `size` bytes; 1 on success.
static inline int CCrypto_ec_coordinates(const EVP_PKEY *key, unsigned char *x, unsigned char *y, int size) {
    BIGNUM *bx = NULL, *by = NULL;
    int ok = EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, &bx) == 1
        && EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, &by) == 1
        && BN_bn2binpad(bx, x, size) == size
        && BN_bn2binpad(by, y, size) == size;
    BN_free(bx);
    BN_free(by);
    return ok;
}

// MARK: Generating keys

static inline EVP_PKEY *CCrypto_generate_rsa(int bits) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (context != NULL && EVP_PKEY_keygen_init(context) == 1
        && EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1) {
        if (EVP_PKEY_generate(context, &key) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    return key;
}

static inline EVP_PKEY *CCrypto_generate_p256(void) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (context != NULL && EVP_PKEY_keygen_init(context) == 1
        && EVP_PKEY_CTX_set_group_name(context, SN_X9_62_prime256v1) == 1) {
        if (EVP_PKEY_generate(context, &key) != 1) key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    return key;
}

// MARK: ECDSA signatures: JWS's raw r || s against libcrypto's DER

// The DER ECDSA-Sig-Value of r = raw[0..<size], s = raw[size..<2 size] into `out` (room
// for `capacity` bytes): its length, or -1.
static inline int CCrypto_ecdsa_raw_to_der(const unsigned char *raw, int size, unsigned char *out, int capacity) {
    ECDSA_SIG *signature = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, size, NULL);
    BIGNUM *s = BN_bin2bn(raw + size, size, NULL);
    int length = -1;
    if (signature != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(signature, r, s) == 1) {
        r = s = NULL; // the signature owns them now
        if (i2d_ECDSA_SIG(signature, NULL) <= capacity) {
            unsigned char *cursor = out;
            length = i2d_ECDSA_SIG(signature, &cursor);
        }
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(signature);
    return length;
}

// r and s of a DER ECDSA-Sig-Value, each left-padded to `size` bytes, into `raw`; 1 on success.
static inline int CCrypto_ecdsa_der_to_raw(const unsigned char *der, long length, unsigned char *raw, int size) {
    const unsigned char *cursor = der;
    ECDSA_SIG *signature = d2i_ECDSA_SIG(NULL, &cursor, length);
    if (signature == NULL) return 0;
    int ok = BN_bn2binpad(ECDSA_SIG_get0_r(signature), raw, size) == size
        && BN_bn2binpad(ECDSA_SIG_get0_s(signature), raw + size, size) == size;
    ECDSA_SIG_free(signature);
    return ok;
}

// MARK: X.509 certificates

// A DER certificate; NULL unless it is one and fills `length` exactly.
static inline X509 *CCrypto_certificate_from_der(const unsigned char *der, long length) {
    const unsigned char *cursor = der;
    X509 *certificate = d2i_X509(NULL, &cursor, length);
    if (certificate != NULL && cursor != der + length) {
        X509_free(certificate);
        return NULL;
    }
    return certificate;
}

// The DER of the first "CERTIFICATE" PEM block of `text` into `*der` (OPENSSL_malloc'd: free
// it with CCrypto_free), its length into `*length`; 1 when there is such a block. Other text
// and other blocks before it are skipped; PEM_read_bio_X509 would also take the "X509
// CERTIFICATE" and "TRUSTED CERTIFICATE" labels, the last with trust settings appended.
static inline int CCrypto_certificate_pem_block(const char *text, int text_length, unsigned char **der, long *length) {
    BIO *bio = BIO_new_mem_buf(text, text_length);
    if (bio == NULL) return 0;
    int found = 0;
    char *name = NULL, *header = NULL;
    unsigned char *data = NULL;
    long data_length = 0;
    while (!found && PEM_read_bio(bio, &name, &header, &data, &data_length) == 1) {
        found = strcmp(name, PEM_STRING_X509) == 0;
        if (found) {
            *der = data;
            *length = data_length;
        } else {
            OPENSSL_free(data);
        }
        OPENSSL_free(name);
        OPENSSL_free(header);
    }
    BIO_free(bio);
    return found;
}

// OPENSSL_free, a macro.
static inline void CCrypto_free(void *pointer) {
    OPENSSL_free(pointer);
}

// The certificate's DER into `out` (NULL: only its length); the length, or a negative number
// on error.
static inline int CCrypto_certificate_der(X509 *certificate, unsigned char *out) {
    unsigned char *cursor = out;
    return i2d_X509(certificate, out == NULL ? NULL : &cursor);
}

// The seconds from the Unix epoch to `time` (negative before it) into `*seconds`; 1 on success.
static inline int CCrypto_asn1_time_unix(const ASN1_TIME *time, int64_t *seconds) {
    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, rest = 0;
    int ok = epoch != NULL && ASN1_TIME_diff(&days, &rest, epoch, time) == 1;
    ASN1_TIME_free(epoch);
    if (ok) *seconds = (int64_t)days * 86400 + rest;
    return ok;
}

// The DER of the certificate's subject (`which` = 0) or issuer (1) name into `out` (NULL: only
// its length); the length, or a negative number on error. The encoding read is kept, so two
// names compare byte for byte as the certificates hold them.
static inline int CCrypto_certificate_name_der(X509 *certificate, int which, unsigned char *out) {
    const X509_NAME *name = which == 0 ? X509_get_subject_name(certificate) : X509_get_issuer_name(certificate);
    if (name == NULL) return -1;
    unsigned char *cursor = out;
    return i2d_X509_NAME(name, out == NULL ? NULL : &cursor);
}

// The DER SubjectPublicKeyInfo of the certificate into `out` (NULL: only its length), as the
// certificate holds it; the length, or a negative number on error.
static inline int CCrypto_certificate_spki_der(X509 *certificate, unsigned char *out) {
    X509_PUBKEY *key = X509_get_X509_PUBKEY(certificate);
    if (key == NULL) return -1;
    unsigned char *cursor = out;
    return i2d_X509_PUBKEY(key, out == NULL ? NULL : &cursor);
}

// 1 when `issuer`'s public key verifies `certificate`'s signature, 0 when not or when the key
// cannot be read. Only the signature: no name, date or extension is looked at.
static inline int CCrypto_certificate_signed_by(X509 *certificate, X509 *issuer) {
    EVP_PKEY *key = X509_get0_pubkey(issuer);
    if (key == NULL) return 0;
    return X509_verify(certificate, key) == 1;
}

// The certificate's serial number in lowercase hexadecimal without leading zeros ("0" for
// zero, a leading "-" when negative) into `out` of `capacity` bytes, NUL-terminated; the
// length, or -1 when it does not fit or cannot be read.
static inline int CCrypto_certificate_serial_hex(X509 *certificate, char *out, int capacity) {
    BIGNUM *number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(certificate), NULL);
    if (number == NULL) return -1;
    char *hex = BN_bn2hex(number);
    BN_free(number);
    if (hex == NULL) return -1;
    int length = 0;
    const char *cursor = hex;
    if (*cursor == '-') out[length++] = '-', cursor++;
    while (*cursor == '0' && cursor[1] != 0) cursor++;
    int ok = 1;
    for (; *cursor != 0; cursor++) {
        if (length + 1 >= capacity) { ok = 0; break; }
        char c = *cursor;
        out[length++] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
    }
    OPENSSL_free(hex);
    if (!ok) return -1;
    out[length] = 0;
    return length;
}

// Whether the certificate's subject name has a serialNumber attribute (2.5.4.5).
static inline int CCrypto_subject_has_serial_number(X509 *certificate) {
    const X509_NAME *name = X509_get_subject_name(certificate);
    return name != NULL && X509_NAME_get_index_by_NID(name, NID_serialNumber, -1) >= 0;
}

// The number of extensions of `certificate` whose OID is `object`.
static inline int CCrypto_extension_count(X509 *certificate, const ASN1_OBJECT *object) {
    int count = 0;
    int index = -1;
    while ((index = X509_get_ext_by_OBJ(certificate, object, index)) >= 0) count++;
    return count;
}

// X509_verify_cert of `leaf` at `at` (Unix seconds), with `intermediates` as untrusted
// certificates and only what `store` holds trusted: 1 when the chain verifies, 0 when not
// (`*error` then holds X509_STORE_CTX_get_error and `*depth` the failing certificate's place
// in the chain, 0 for the leaf), -1 when libcrypto could not run the check. Each call has its
// own X509_STORE_CTX; the store itself is only read, so many threads may share it.
static inline int CCrypto_verify_certificate(X509_STORE *store, X509 *leaf, X509 *const *intermediates, int count,
                                             int64_t at, int *error, int *depth) {
    int result = -1;
    STACK_OF(X509) *untrusted = sk_X509_new_reserve(NULL, count);
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (untrusted == NULL || context == NULL) goto done;
    for (int index = 0; index < count; index++) {
        if (sk_X509_push(untrusted, intermediates[index]) <= 0) goto done;
    }
    if (X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) goto done;
    // Sets X509_V_FLAG_USE_CHECK_TIME too: every certificate's validity is judged at `at`,
    // never at the system clock.
    X509_STORE_CTX_set_time(context, 0, (time_t)at);
    int verified = X509_verify_cert(context);
    if (verified == 1) {
        result = 1;
    } else {
        *error = X509_STORE_CTX_get_error(context);
        *depth = X509_STORE_CTX_get_error_depth(context);
        // A negative result is an internal failure, unless libcrypto recorded why the chain
        // failed all the same.
        result = (verified == 0 || *error != X509_V_OK) ? 0 : -1;
    }
done:
    X509_STORE_CTX_free(context);
    sk_X509_free(untrusted); // the certificates stay with their owners
    return result;
}

// MARK: CMS signed data

// Verifies the CMS SignedData `der` (its content embedded, its signer's certificates in it)
// against `roots` only, at `at` (Unix seconds); on success the content into `*content`
// (OPENSSL_malloc'd: free it with CCrypto_free) and its length into `*content_length`.
// 1 when it verifies, 0 when not, -1 when libcrypto could not run the check.
static inline int CCrypto_cms_verify(const unsigned char *der, long length, X509 *const *roots, int count, int64_t at,
                                     unsigned char **content, long *content_length) {
    int result = -1;
    const unsigned char *cursor = der;
    CMS_ContentInfo *cms = d2i_CMS_ContentInfo(NULL, &cursor, length);
    X509_STORE *store = X509_STORE_new();
    BIO *out = BIO_new(BIO_s_mem());
    if (store == NULL || out == NULL) goto done;
    if (cms == NULL || cursor != der + length) {
        result = 0;
        goto done;
    }
    for (int index = 0; index < count; index++) {
        if (X509_STORE_add_cert(store, roots[index]) != 1) goto done;
    }
    X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), (time_t)at);
    if (CMS_verify(cms, NULL, store, NULL, out, CMS_BINARY) != 1) {
        result = 0;
        goto done;
    }
    char *data = NULL;
    long size = BIO_get_mem_data(out, &data);
    unsigned char *copy = OPENSSL_malloc(size > 0 ? (size_t)size : 1);
    if (copy == NULL) goto done;
    if (size > 0) memcpy(copy, data, (size_t)size);
    *content = copy;
    *content_length = size;
    result = 1;
done:
    BIO_free(out);
    X509_STORE_free(store);
    CMS_ContentInfo_free(cms);
    return result;
}

// A CMS SignedData of `content` (embedded) signed by `signer` with `key`, carrying `certs`
// too, as DER into `*der` (OPENSSL_malloc'd) and `*der_length`; 1 on success. For tests
// and stand-ins: the gateway only verifies.
static inline int CCrypto_cms_sign(const unsigned char *content, long length, X509 *signer, EVP_PKEY *key,
                                   X509 *const *certs, int count, unsigned char **der, long *der_length) {
    int result = 0;
    STACK_OF(X509) *chain = sk_X509_new_null();
    BIO *in = BIO_new_mem_buf(content, (int)length);
    CMS_ContentInfo *cms = NULL;
    if (chain == NULL || in == NULL) goto done;
    for (int index = 0; index < count; index++) {
        if (sk_X509_push(chain, certs[index]) <= 0) goto done;
    }
    cms = CMS_sign(signer, key, chain, in, CMS_BINARY | CMS_NOSMIMECAP);
    if (cms == NULL) goto done;
    unsigned char *buffer = NULL;
    int written = i2d_CMS_ContentInfo(cms, &buffer);
    if (written <= 0) goto done;
    *der = buffer;
    *der_length = written;
    result = 1;
done:
    CMS_ContentInfo_free(cms);
    BIO_free(in);
    sk_X509_free(chain);
    return result;
}

// MARK: Private keys in PEM

// The private key of a PEM block ("PRIVATE KEY", PKCS #8, or "EC PRIVATE KEY"); NULL when
// there is none or it is encrypted.
static inline EVP_PKEY *CCrypto_private_key_from_pem(const char *text, int length) {
    BIO *bio = BIO_new_mem_buf(text, length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
    BIO_free(bio);
    return key;
}

// The key as unencrypted PKCS #8 PEM into `*text` (OPENSSL_malloc'd) and `*length`; 1 on success.
static inline int CCrypto_private_key_pem(EVP_PKEY *key, char **text, long *length) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    int ok = PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1;
    if (ok) {
        char *data = NULL;
        long size = BIO_get_mem_data(bio, &data);
        char *copy = OPENSSL_malloc((size_t)size + 1);
        ok = copy != NULL;
        if (ok) {
            memcpy(copy, data, (size_t)size);
            copy[size] = 0;
            *text = copy;
            *length = size;
        }
    }
    BIO_free(bio);
    return ok;
}

// MARK: Issuing X.509 certificates

// Adds a critical basicConstraints extension with cA = `ca` (no path length limit); 1 on success.
static inline int CCrypto_add_basic_constraints(X509 *certificate, int ca) {
    BASIC_CONSTRAINTS *constraints = BASIC_CONSTRAINTS_new();
    if (constraints == NULL) return 0;
    constraints->ca = ca ? 0xFF : 0;
    int ok = X509_add1_ext_i2d(certificate, NID_basic_constraints, constraints, 1, X509V3_ADD_DEFAULT) == 1;
    BASIC_CONSTRAINTS_free(constraints);
    return ok;
}

// MARK: HMAC

// Starts an HMAC-SHA-256 under `key` in a context of the pre-fetched "HMAC" EVP_MAC.
static inline int CCrypto_hmac_sha256_init(EVP_MAC_CTX *context, const unsigned char *key, size_t key_length) {
    char digest[] = "SHA256";
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    params[1] = OSSL_PARAM_construct_end();
    return EVP_MAC_init(context, key, key_length, params);
}

#endif
