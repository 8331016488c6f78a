#define BOOST_TEST_MODULE runtime_mocker
#include <boost/test/unit_test.hpp>
