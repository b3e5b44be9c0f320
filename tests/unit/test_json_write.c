/* test_json_write.c: the plan's streaming JSON writer (codegen/json_write.c) against
 * cJSON: random documents written both ways must come out byte for byte as
 * cJSON_PrintUnformatted (compact) and cJSON_Print (pretty) print them, and every
 * byte value survives a string round trip through cJSON's parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../../codegen/json_write.h"
#include "test.h"

static uint64_t rng = 12345;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rng >> 33) % n;
}

/* A random string: ASCII, control bytes, quotes, backslashes and UTF-8. */
static void rnd_string(char *s, int max)
{
	static const char *const pieces[] = {"a", "Z", "0", " ", "\"", "\\", "/", "\t", "\n",
					     "\r", "\b", "\f", "\x01", "\x1f", "\x7f", "é", "€",
					     "\xf0\x9f\x98\x80", "{", "]", ":", ","};
	int n = (int)rnd(8), len = 0;
	s[0] = 0;
	for (int i = 0; i < n; i++) {
		const char *p = pieces[rnd(sizeof pieces / sizeof pieces[0])];
		if (len + (int)strlen(p) >= max)
			break;
		strcpy(s + len, p);
		len += (int)strlen(p);
	}
}

/* Append a random value to both: the cJSON tree (returned) and the writer. */
static cJSON *rnd_value(JsonW *w, int depth)
{
	char text[64];
	unsigned k = depth > 4 ? 1 + rnd(5) : rnd(7);
	switch (k) {
	case 0:
	case 6: {
		bool obj = k == 0;
		cJSON *c = obj ? cJSON_CreateObject() : cJSON_CreateArray();
		obj ? jw_obj(w) : jw_arr(w);
		int n = (int)rnd(5);
		for (int i = 0; i < n; i++) {
			if (obj) {
				rnd_string(text, sizeof text);
				jw_key(w, text);
				cJSON_AddItemToObject(c, text, rnd_value(w, depth + 1));
			} else {
				cJSON_AddItemToArray(c, rnd_value(w, depth + 1));
			}
		}
		jw_end(w);
		return c;
	}
	case 1:
		rnd_string(text, sizeof text);
		jw_str(w, text);
		return cJSON_CreateString(text);
	case 2: {
		int64_t v = (int64_t)(rng >> 1) * (rnd(2) ? 1 : -1) >> rnd(63);
		if (rnd(8) == 0)
			v = rnd(2) ? INT64_MIN : INT64_MAX;
		jw_int(w, v);
		snprintf(text, sizeof text, "%lld", (long long)v);
		return cJSON_CreateRaw(text);
	}
	case 3:
		snprintf(text, sizeof text, "%u.5e-%u", rnd(1000), rnd(30));
		jw_raw(w, text);
		return cJSON_CreateRaw(text);
	case 4: {
		bool v = rnd(2);
		jw_bool(w, v);
		return cJSON_CreateBool(v);
	}
	default:
		jw_null(w);
		return cJSON_CreateNull();
	}
}

static void test_matches_cjson(void **state)
{
	(void)state;
	for (int pretty = 0; pretty < 2; pretty++)
		for (int iter = 0; iter < 500; iter++) {
			Buf b = {0};
			JsonW w;
			jw_init(&w, &b, pretty);
			/* a document is an object, like the plan */
			cJSON *root = cJSON_CreateObject();
			jw_obj(&w);
			int n = (int)rnd(6);
			for (int i = 0; i < n; i++) {
				char key[64];
				rnd_string(key, sizeof key);
				jw_key(&w, key);
				cJSON_AddItemToObject(root, key, rnd_value(&w, 1));
			}
			jw_end(&w);
			assert_int_equal(w.depth, 0);
			char *want = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
			assert_non_null(b.data);
			assert_string_equal(b.data, want);
			cJSON *back = cJSON_Parse(b.data);
			assert_non_null(back);
			cJSON_Delete(back);
			free(want);
			cJSON_Delete(root);
			buf_free(&b);
		}
}

/* Every byte from 1 to 255 in a string reads back unchanged. */
static void test_every_byte(void **state)
{
	(void)state;
	char s[256];
	for (int i = 1; i < 256; i++)
		s[i - 1] = (char)i;
	s[255] = 0;
	Buf b = {0};
	JsonW w;
	jw_init(&w, &b, false);
	jw_arr(&w);
	jw_str(&w, s);
	jw_str(&w, NULL);
	jw_int(&w, 0);
	jw_int(&w, -7);
	jw_end(&w);
	cJSON *a = cJSON_Parse(b.data);
	assert_non_null(a);
	assert_string_equal(cJSON_GetArrayItem(a, 0)->valuestring, s);
	assert_string_equal(cJSON_GetArrayItem(a, 1)->valuestring, "");
	assert_true(strstr(b.data, ",0,-7]") != NULL);
	assert_true(strstr(b.data, "\\u0001\\u0002") == b.data + 2);
	cJSON_Delete(a);
	buf_free(&b);
}

const struct CMUnitTest json_write_tests[] = {
	cmocka_unit_test(test_matches_cjson),
	cmocka_unit_test(test_every_byte),
};
const size_t json_write_ntests = SUITE_COUNT(json_write_tests);
