package httpapi

import (
	"sync"

	"github.com/gin-gonic/gin"
)

// bindSpeech is bindJSON for a speech request, which every speech call decodes, into a buffer that is kept for the
// next call: encoding/json copies the strings it decodes, so the request holds none of it.
func bindSpeech(c *gin.Context, dst *speechReq) error {
	bufp := bodyPool.Get().(*[]byte)
	body, err := readBody(c.Request.Body, (*bufp)[:0])
	defer func() {
		if cap(body) <= maxPooledBody { // a rare large body is not kept for every later request
			*bufp = body[:0]
		}
		bodyPool.Put(bufp)
	}()
	return decodeBounded(body, err, dst)
}

// maxPooledBody bounds the bodies bodyPool keeps buffers for; a speech request is usually a few hundred bytes.
const maxPooledBody = 64 << 10

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
